package backing

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// Options describe the backing kernel of a surface: a kernelspec run on
// this machine, or on a Jupyter server when Gateway is set.
type Options struct {
	// Kernel is the kernelspec's name. Default "python3".
	Kernel string
	// KernelDir is where install found the kernelspec (LocalOptions).
	KernelDir string
	// Args are more command-line arguments for a local kernel.
	Args []string
	// Dir is a local kernel's working directory.
	Dir string
	// Owner is the kernelspec name of the agentkernel that owns the runner
	// (the chain mark), or the command ("ask").
	Owner string
	// Gateway, when set, runs the kernel on that server.
	Gateway *Gateway
	// Reaper is the gateway reaper's command line (RemoteOptions.Reaper).
	Reaper []string
	// Refuse, when set, is why no kernel may be started (LocalOptions): it
	// also keeps a kernel off a server.
	Refuse error
	// OnIOPub receives the iopub messages that belong to no request.
	OnIOPub func(*wire.Message)
	// Key is a local kernel's signing key (LocalOptions.Key); a kernel on
	// a server has the server's.
	Key string
	// StartTimeout bounds a local kernel's start (LocalOptions).
	StartTimeout time.Duration
	// Logger; default a null logger.
	Logger hclog.Logger
}

// Open returns the Runner the options describe. It is the one place a
// backing kind is chosen; it starts nothing.
func Open(o Options) (Runner, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Gateway == nil || o.Refuse != nil {
		return NewLocal(LocalOptions{Kernel: o.Kernel, KernelDir: o.KernelDir, Args: o.Args, Dir: o.Dir, Owner: o.Owner, Refuse: o.Refuse,
			OnIOPub: o.OnIOPub, Key: o.Key, StartTimeout: o.StartTimeout, Logger: o.Logger}), nil
	}
	if len(o.Args) > 0 {
		o.Logger.Warn("a kernel on a server takes no command-line arguments; ignored", "args", o.Args)
	}
	return NewRemote(RemoteOptions{Gateway: *o.Gateway, Kernel: o.Kernel, Owner: o.Owner, OnIOPub: o.OnIOPub,
		Reaper: o.Reaper, Logger: o.Logger})
}
