package load

import (
	"testing"
	"time"
)

func TestTableDurationsAreRoundedToTheirScale(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want string
	}{
		{"seconds to the hundredth", 1234567 * time.Microsecond, "1.23s"},
		{"milliseconds to the hundredth", 1234567 * time.Nanosecond, "1.23ms"},
		{"microseconds to the tenth", 8234 * time.Nanosecond, "8.2µs"},
		{"hundreds of microseconds to the tenth", 460149 * time.Nanosecond, "460.1µs"},
		{"under a microsecond, the nanoseconds", 67 * time.Nanosecond, "67ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := round(tt.in).String(); got != tt.want {
				t.Fatalf("round(%v) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
