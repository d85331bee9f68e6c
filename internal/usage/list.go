package usage

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amount is a quantity of one quota resource as an integer in the
// resource's scale (Milli): thousandths for CPU, whole units rounded up
// otherwise (bytes, devices), so that sums are exact and cheap.
type Amount struct {
	Key string `json:"key"`
	N   int64  `json:"n"`
}

// List is what an object adds to quota resources: amounts sorted by key,
// none zero. It is small and holds nothing of the object it came from.
type List []Amount

// Milli reports whether a quota resource is counted in thousandths: CPU,
// which is asked for in millicores.
func Milli(key string) bool {
	return key == "cpu" || strings.HasSuffix(key, ".cpu")
}

// Scaled is q as an amount of key: thousandths for CPU, whole units
// (rounded up, as the API server rounds a fractional byte) otherwise.
func Scaled(key string, q resource.Quantity) int64 {
	if Milli(key) {
		return q.MilliValue()
	}
	return q.Value()
}

// Of turns a resource list into a List; zero quantities are left out.
func Of(rl corev1.ResourceList) List {
	out := make(List, 0, len(rl))
	for name, q := range rl {
		if n := Scaled(string(name), q); n != 0 {
			out = append(out, Amount{Key: string(name), N: n})
		}
	}
	slices.SortFunc(out, func(a, b Amount) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Get returns the amount of key, or 0.
func (l List) Get(key string) int64 {
	i, ok := slices.BinarySearchFunc(l, key, func(a Amount, k string) int { return strings.Compare(a.Key, k) })
	if !ok {
		return 0
	}
	return l[i].N
}

// Increase is what l adds over before, key by key: the amounts that grew,
// by how much (a pod resized up, a claim expanded). Amounts that shrank
// add nothing until the object is seen with them.
func (l List) Increase(before List) List {
	var out List
	for _, a := range l {
		if d := a.N - before.Get(a.Key); d > 0 {
			out = append(out, Amount{Key: a.Key, N: d})
		}
	}
	return out
}

// Max is the larger of l's and other's amount of each key: what an object
// holds once stored when either of two requests changing it is.
func (l List) Max(other List) List {
	out := make(List, 0, max(len(l), len(other)))
	i, j := 0, 0
	for i < len(l) || j < len(other) {
		switch {
		case j == len(other) || i < len(l) && l[i].Key < other[j].Key:
			out = append(out, l[i])
			i++
		case i == len(l) || other[j].Key < l[i].Key:
			out = append(out, other[j])
			j++
		default:
			out = append(out, Amount{Key: l[i].Key, N: max(l[i].N, other[j].N)})
			i, j = i+1, j+1
		}
	}
	return out
}

// Covers reports whether l holds at least every amount of other: an object
// seen with l has reached what a hold of other expected of it.
func (l List) Covers(other List) bool {
	for _, a := range other {
		if l.Get(a.Key) < a.N {
			return false
		}
	}
	return true
}

// Key is l as a string, for interning equal lists.
func (l List) Key() string {
	var b strings.Builder
	for _, a := range l {
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(a.N, 10))
		b.WriteByte(';')
	}
	return b.String()
}

// Format writes an amount of key as a quantity people read: CPU in cores
// or millicores (2, 1500m), bytes in the largest binary unit that divides
// them (512Mi, 2Gi), anything else (GPUs, claims of a class) as a whole
// number: 1000, not 1k.
func Format(key string, n int64) string {
	if Milli(key) {
		return resource.NewMilliQuantity(n, resource.DecimalSI).String()
	}
	if bytes(key) {
		return resource.NewQuantity(n, resource.BinarySI).String()
	}
	return strconv.FormatInt(n, 10)
}

// bytes reports whether a quota resource counts bytes.
func bytes(key string) bool {
	return strings.HasSuffix(key, "memory") || strings.HasSuffix(key, "storage") || strings.HasPrefix(key, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(key, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix)
}
