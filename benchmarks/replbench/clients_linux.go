package replbench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when this one dies, so
// that a benchmark killed mid-run leaves no client process behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
