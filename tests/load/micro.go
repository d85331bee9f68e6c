package load

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Micro is the median of a Go benchmark's runs.
type Micro struct {
	// Name is the benchmark's name without the GOMAXPROCS suffix.
	Name string `json:"name"`
	// Runs is how many result lines the median is taken over.
	Runs int `json:"runs"`
	// Metrics are the medians by unit ("ns/op", "B/op", ...).
	Metrics map[string]float64 `json:"metrics"`
}

// ParseMicro reads `go test -bench` output and returns the median of every
// metric of every benchmark, in the order they first appear.
func ParseMicro(r io.Reader) ([]Micro, error) {
	values := map[string]map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := fields[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if values[name] == nil {
			values[name] = map[string][]float64{}
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			values[name][fields[i+1]] = append(values[name][fields[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Micro, 0, len(order))
	for _, name := range order {
		m := Micro{Name: name, Metrics: map[string]float64{}}
		for unit, vs := range values[name] {
			slices.Sort(vs)
			m.Metrics[unit] = vs[len(vs)/2]
			m.Runs = max(m.Runs, len(vs))
		}
		out = append(out, m)
	}
	return out, nil
}

// metric is a benchmark's median in a unit, if it was run.
func metric(ms []Micro, name, unit string) (float64, bool) {
	for _, m := range ms {
		if m.Name == name {
			v, ok := m.Metrics[unit]
			return v, ok
		}
	}
	return 0, false
}
