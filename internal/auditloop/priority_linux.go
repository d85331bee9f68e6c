package auditloop

import "golang.org/x/sys/unix"

// lowestNice is the nice value of the audit's thread: the lowest CPU
// priority an unprivileged process may give one of its threads.
const lowestNice = 19

// lowPriority gives the calling thread the lowest CPU priority. Linux keeps
// a nice value per thread: PRIO_PROCESS with a thread id sets that thread's.
func lowPriority() error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), lowestNice)
}
