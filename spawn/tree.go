package spawn

import (
	"os"
	"strconv"

	"github.com/locklab/locklab/internal/procstat"
)

// Descendants lists the processes below pid (children, theirs, ...), read
// from /proc: what a started program started in turn (a script's JVM).
func Descendants(pid int) []int {
	children := map[int][]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(child); ok {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads pid's parent from /proc.
func parentOf(pid int) (int, bool) {
	st, err := procstat.Read(pid)
	return st.PPID, err == nil
}
