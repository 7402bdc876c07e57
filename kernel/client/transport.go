package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// The transports of Options.Transport.
const (
	TransportTCP = "tcp"
	TransportIPC = "ipc"
)

// maxSocketPath is the longest Unix socket path that every Unix takes
// (sun_path is 108 bytes on Linux, 104 on the BSDs and macOS, with the
// terminating zero).
const maxSocketPath = 103

// ipcName is the connection file's "ip" under the ipc transport, in the
// kernel's private directory: its sockets are kernel-1 … kernel-5 there.
const ipcName = "kernel"

// transport returns the transport a start of spec uses: the one opts
// names, else ipc for a kernel known to honour it (ipykernel) on a system
// with Unix sockets, else tcp.
func transport(spec *Spec, opts Options) string {
	switch {
	case opts.Transport != "":
		return opts.Transport
	case runtime.GOOS != "windows" && spec.speaksIPC():
		return TransportIPC
	}
	return TransportTCP
}

// speaksIPC reports whether spec runs ipykernel (python -m
// ipykernel_launcher, -m ipykernel, or the launcher's path), which binds
// the ipc sockets a connection file names. Other kernels may not: IRkernel
// and IJulia build tcp-style addresses out of any transport.
func (s *Spec) speaksIPC() bool {
	for i, a := range s.Argv {
		switch strings.TrimSuffix(filepath.Base(a), ".py") {
		case "ipykernel_launcher":
			return true
		case "ipykernel":
			if i > 0 && s.Argv[i-1] == "-m" {
				return true
			}
		}
	}
	return false
}

// newConnection returns fresh connection info for a start of spec: ipc
// sockets in a new private directory (returned too: the kernel's to remove
// when it is gone), or, when the transport is tcp or no directory fits a
// socket path, five free ports on loopback.
func newConnection(spec *Spec, opts Options) (conn *wire.ConnectionInfo, ipcDir string, err error) {
	if transport(spec, opts) == TransportIPC {
		dir, err := newIPCDir(opts.ConnectionDir)
		switch {
		case err == nil:
			return wire.NewIPCConnectionInfo(filepath.Join(dir, ipcName)), dir, nil
		case opts.Transport == TransportIPC:
			return nil, "", err
		}
		opts.Logger.Debug("no directory for ipc sockets; using tcp", "kernel", spec.Name, "error", err)
	}
	conn, err = wire.NewConnectionInfo("127.0.0.1")
	return conn, "", err
}

// newIPCDir makes a directory for one kernel's sockets, mode 0700 (nobody
// else may connect, nor take their names): in the runtime directory beside
// the connection file, or in the temporary directory when a socket path
// there would be too long.
func newIPCDir(connDir string) (string, error) {
	var errs []error
	for _, base := range []string{connDir, os.TempDir()} {
		if err := os.MkdirAll(base, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		dir, err := os.MkdirTemp(base, "kernel-ipc-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sock := (&wire.ConnectionInfo{IP: filepath.Join(dir, ipcName)}).IPCPath(5); len(sock) > maxSocketPath {
			os.Remove(dir)
			errs = append(errs, fmt.Errorf("socket path %s is over %d bytes", sock, maxSocketPath))
			continue
		}
		return dir, nil
	}
	return "", fmt.Errorf("client: directory for ipc sockets: %w", errors.Join(errs...))
}

// removeSockets removes the ipc socket files of conn (those a killed
// kernel left behind), before a restart reuses their names.
func removeSockets(conn *wire.ConnectionInfo) {
	if conn.Transport != TransportIPC {
		return
	}
	for _, ch := range wire.Channels() {
		os.Remove(conn.IPCPath(conn.Port(ch)))
	}
}

// removeIPCDir removes a kernel's socket directory (dir "" is none).
func removeIPCDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("client: remove the ipc sockets: %w", err)
	}
	return nil
}
