package auditloop

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadNice is the nice value of the calling goroutine's thread, which
// the caller has locked to it.
func threadNice(t *testing.T) int {
	t.Helper()
	// The system call gives 20 - nice, so that it is never negative.
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		t.Error(err)
	}
	return 20 - raw
}

// TestTheAuditRunsOnAThreadOfTheLowestPriority: the loop audits on a thread
// of nice 19, and the process's other threads keep theirs.
func TestTheAuditRunsOnAThreadOfTheLowestPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadNice(t)
	l, _, _ := auditOfFixture(t)
	audited := make(chan int, 1)
	l.opts.Observer = observerFunc(func() {
		select {
		case audited <- threadNice(t): // on the loop's goroutine
		default:
		}
	})
	running(t, l)
	select {
	case nice := <-audited:
		if nice != lowestNice {
			t.Errorf("the audit ran at nice %d, want %d", nice, lowestNice)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no audit")
	}
	if after := threadNice(t); after != before {
		t.Errorf("this test's thread went from nice %d to %d", before, after)
	}
}
