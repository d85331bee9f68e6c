package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantguard/tenantguard/internal/memlimit"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// Process is a target running in its own process, so that its memory is
// its own and it competes for the cores as a real webhook would.
type Process struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	logs  *fixtures.SyncBuffer
	done  chan struct{}
	// reloads is the last status line of a served target
	reloads atomic.Pointer[Reloads]
	// heaps receives a served target's answers to Heap
	heaps chan heapAnswer
	// audits is what a served target auditing in the background reported
	audits auditLog
}

// start runs a command whose stdin stays open for the process's life.
func start(ctx context.Context, name string, stdout io.Writer, bin string, args ...string) (*Process, error) {
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the harness runs its own binary and the pinned opa
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p := &Process{name: name, cmd: cmd, stdin: stdin, logs: &fixtures.SyncBuffer{}, done: make(chan struct{}), heaps: make(chan heapAnswer, 1), audits: newAuditLog()}
	cmd.Stdout, cmd.Stderr = stdout, p.logs
	if stdout == nil {
		cmd.Stdout = p.logs
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Memory is a process's resident set size now and at its peak, in MiB,
// from /proc.
func (p *Process) Memory() (rss, peak float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	field := func(name string) float64 {
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				return kb / 1024
			}
		}
		return 0
	}
	return field("VmRSS"), field("VmHWM"), nil
}

// CPU is the CPU time, user and system, the process has used so far.
func (p *Process) CPU() (time.Duration, error) { return processCPU(p.cmd.Process.Pid) }

// Stop closes the process's stdin, which ends a served target, and kills it
// if it has not exited a few seconds later.
func (p *Process) Stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ServedOptions are the optional parts of a served target.
type ServedOptions struct {
	// Executable is the tgload binary that serves the target; empty is this
	// harness's own. Another build's serves that build's tenantguard
	// (Compare).
	Executable string
	// CPUProfile, when set, receives a CPU profile of the target once ready.
	CPUProfile string
	// Reload, when set, has tenantguard load a changed registry this often
	// while it serves (see ServeTenantguard).
	Reload time.Duration
	// MemoryLimit is tenantguard's soft memory limit, as serve
	// --memory-limit takes it ("" or "0": none).
	MemoryLimit string
	// GCPercent is tenantguard's garbage collector target, as serve
	// --gc-percent takes it; "" leaves serve's default.
	GCPercent string
	// Audit has tenantguard run serve's background audit over the scale
	// cluster, back to back, held until ResumeAudit (see AuditLoad).
	Audit bool
	// AuditShare is the audit loop's Share (auditloop.Options); 0 its
	// default.
	AuditShare float64
}

// StartServed runs `EXECUTABLE serve ...` (o.Executable, or this harness's
// own binary) and waits for the served target to report it is ready. Later
// status lines (the registry reloads) are kept for Reloads.
func StartServed(ctx context.Context, target string, certFile, keyFile string, s Scale, o ServedOptions) (*Process, Started, error) {
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, Started{}, err
		}
	}
	out, w := io.Pipe()
	args := []string{"serve", "-target", target, "-cert", certFile, "-key", keyFile,
		"-tenants", strconv.Itoa(s.Tenants), "-namespaces", strconv.Itoa(s.Namespaces), "-pods", strconv.Itoa(s.Pods),
		"-cpuprofile", o.CPUProfile, "-reload", o.Reload.String(), "-memory-limit", o.MemoryLimit}
	if o.GCPercent != "" {
		args = append(args, "-gc-percent", o.GCPercent)
	}
	if o.Audit {
		args = append(args, "-audit", "-audit-share", strconv.FormatFloat(o.AuditShare, 'g', -1, 64))
	}
	p, err := start(ctx, target, w, exe, args...)
	if err != nil {
		return nil, Started{}, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
			var st struct {
				Reloads
				Loaded *int64 `json:"reloads"` // required: other lines are not reload statuses
				heapAnswer
				auditStatus
			}
			switch {
			case json.Unmarshal(sc.Bytes(), &st) != nil:
			case st.auditStatus != auditStatus{}:
				p.audits.add(st.auditStatus)
			case st.Loaded != nil:
				st.Reloads.Loaded = *st.Loaded
				p.reloads.Store(&st.Reloads)
			case st.Live != nil:
				p.heaps <- st.heapAnswer
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case line, ok := <-lines:
		var st Started
		if err := json.Unmarshal([]byte(line), &st); !ok || err != nil {
			p.Stop()
			return nil, Started{}, fmt.Errorf("%s did not start: %s", target, p.logs.String())
		}
		return p, st, nil
	case <-time.After(5 * time.Minute):
		p.Stop()
		return nil, Started{}, fmt.Errorf("%s did not start in 5 minutes: %s", target, p.logs.String())
	}
}

// Reloads is what a served tenantguard reports after each registry reload.
type Reloads struct {
	// Loaded and Failed count the reloads put in force and refused.
	Loaded int64 `json:"reloads"`
	Failed int64 `json:"reloadsFailed"`
	// Slowest is the longest reload, parse to swap.
	Slowest time.Duration `json:"slowestReload"`
}

// Reloads is the served target's last reported reload status.
func (p *Process) Reloads() Reloads {
	if r := p.reloads.Load(); r != nil {
		return *r
	}
	return Reloads{}
}

// ServeMain is the `serve` subcommand StartServed runs: it serves one
// target on a loopback port, prints its Started as one JSON line once
// ready, and exits when its stdin closes.
func ServeMain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	target := fs.String("target", "tenantguard", "tenantguard or null")
	certFile := fs.String("cert", "", "serving certificate (PEM)")
	keyFile := fs.String("key", "", "its key (PEM)")
	var s Scale
	fs.IntVar(&s.Tenants, "tenants", 1000, "tenants in the registry and the view")
	fs.IntVar(&s.Namespaces, "namespaces", 10, "namespaces per tenant")
	fs.IntVar(&s.Pods, "pods", 10, "pods per namespace")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the served target here")
	reload := fs.Duration("reload", 0, "load a changed registry this often (tenantguard only; 0: never)")
	memoryLimit := fs.String("memory-limit", "", "tenantguard's soft memory limit, as serve --memory-limit takes it (empty: none)")
	gcPercent := fs.Int("gc-percent", memlimit.DefaultGCPercent, "tenantguard's garbage collector target, as serve --gc-percent takes it (GOGC wins when not given)")
	audit := fs.Bool("audit", false, "run serve's background audit over the scale cluster, back to back, held until the audit-resume command (tenantguard only)")
	auditShare := fs.Float64("audit-share", 0, "the background audit's share of the time it runs (auditloop.Options.Share; 0: its default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heap := make(chan heapRequest)
	var other func(string) bool
	var runAudit func(context.Context, *state.Store)
	if *audit && *target == "tenantguard" {
		auditor := newAuditRunner(s, stdout, &sync.Mutex{})
		auditor.share = *auditShare
		other, runAudit = auditor.command, auditor.run
	}
	go answerCommands(os.Stdin, stdout, heap, other, cancel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stopProfile := func() {}
	defer func() { stopProfile() }()
	report := func(st Started) {
		if *cpuProfile != "" {
			if f, err := os.Create(*cpuProfile); err == nil && pprof.StartCPUProfile(f) == nil {
				stopProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
			}
		}
		line, _ := json.Marshal(st)
		_, _ = fmt.Fprintf(stdout, "%s\n", line)
	}
	if *target == "tenantguard" {
		if err := tuneMemory(*memoryLimit, *gcPercent, flagSet(fs, "gc-percent")); err != nil {
			return err
		}
	}
	switch *target {
	case "tenantguard":
		return ServeTenantguard(ctx, ln, *certFile, *keyFile, s, *reload, heap, report, func(r Reloads) {
			line, _ := json.Marshal(r)
			_, _ = fmt.Fprintf(stdout, "%s\n", line)
		}, runAudit)
	case "null":
		go answerHeaps(ctx, heap)
		return ServeNull(ctx, ln, *certFile, *keyFile, report)
	}
	return errors.New("unknown target " + *target)
}

// tuneMemory sets the Go runtime's memory settings as serve does: the soft
// memory limit (none when empty) and the collector's target.
func tuneMemory(memoryLimit string, gcPercent int, gcPercentSet bool) error {
	var limit int64
	if memoryLimit != "" {
		var err error
		if limit, _, err = memlimit.Apply(memoryLimit); err != nil {
			return err
		}
	}
	_, _, err := memlimit.ApplyGCPercent(gcPercent, gcPercentSet, limit, os.Getenv)
	return err
}

// flagSet reports whether a flag was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
