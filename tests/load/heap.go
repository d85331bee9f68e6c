package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

// heapCommand asks a served target, on its stdin, for its live heap: it
// collects garbage, answers with a heapAnswer line, and writes a heap
// profile to the path that follows the command, if any.
const heapCommand = "heap"

// heapAnswer is a served target's live heap after a forced collection.
type heapAnswer struct {
	// Live is the bytes of the heap's live objects (runtime.MemStats
	// HeapAlloc right after runtime.GC).
	Live  *uint64 `json:"liveHeap,omitempty"`
	Error string  `json:"heapError,omitempty"`
}

// LiveHeap has a served target collect its garbage and report the bytes of
// its live heap; with profile set it also writes a heap profile there (to
// compare two with `go tool pprof -base`). It takes the process's
// collector's time, not the load's: call it between runs.
func (p *Process) LiveHeap(profile string) (uint64, error) {
	if _, err := fmt.Fprintf(p.stdin, "%s %s\n", heapCommand, profile); err != nil {
		return 0, err
	}
	select {
	case a := <-p.heaps:
		if a.Error != "" {
			return 0, errors.New(a.Error)
		}
		return *a.Live, nil
	case <-p.done:
		return 0, fmt.Errorf("%s exited", p.name)
	case <-time.After(time.Minute):
		return 0, fmt.Errorf("%s did not report its heap in a minute", p.name)
	}
}

// heapRequest is a heap command for the served target: its profile path,
// and where to answer.
type heapRequest struct {
	profile string
	answer  chan heapAnswer
}

// answerCommands reads a served target's stdin: each heap command goes to
// heap, whose answer is written to out, any other to other when set; the
// end of the input calls stop.
func answerCommands(in io.Reader, out io.Writer, heap chan<- heapRequest, other func(string) bool, stop func()) {
	defer stop()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, profile, _ := strings.Cut(sc.Text(), " ")
		if cmd != heapCommand {
			if other != nil {
				other(cmd)
			}
			continue
		}
		req := heapRequest{profile: strings.TrimSpace(profile), answer: make(chan heapAnswer, 1)}
		heap <- req
		line, _ := json.Marshal(<-req.answer)
		_, _ = fmt.Fprintf(out, "%s\n", line)
	}
}

// answerHeaps answers heap requests at once, for a target that does not
// reload, until ctx ends.
func answerHeaps(ctx context.Context, heap <-chan heapRequest) {
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-heap:
			req.answer <- liveHeap(req.profile)
		}
	}
}

func liveHeap(profile string) heapAnswer {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	a := heapAnswer{Live: &m.HeapAlloc}
	if profile != "" {
		f, err := os.Create(profile)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			a.Error = err.Error()
		}
	}
	return a
}
