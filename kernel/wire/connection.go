package wire

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// ConnectionInfo is the content of a Jupyter connection file.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	SignatureScheme string `json:"signature_scheme"`
	Key             string `json:"key"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// Addr returns the ZeroMQ endpoint for port, e.g. tcp://127.0.0.1:5555 or
// ipc://kernel-ipc-1 (Jupyter's ipc naming).
func (c *ConnectionInfo) Addr(port int) string {
	if c.Transport == "ipc" {
		return "ipc://" + c.IPCPath(port)
	}
	return fmt.Sprintf("tcp://%s", net.JoinHostPort(c.IP, fmt.Sprint(port)))
}

// IPCPath returns the path of port's Unix socket under the ipc transport:
// IP, a dash and the port, as Jupyter names them.
func (c *ConnectionInfo) IPCPath(port int) string { return fmt.Sprintf("%s-%d", c.IP, port) }

// Channels returns the five channels of a connection file, in the order of
// its fields.
func Channels() []Channel { return []Channel{Shell, IOPub, Stdin, Control, Heartbeat} }

// Port returns ch's port.
func (c *ConnectionInfo) Port(ch Channel) int {
	if p := c.port(ch); p != nil {
		return *p
	}
	return 0
}

// SetPort sets ch's port.
func (c *ConnectionInfo) SetPort(ch Channel, port int) {
	if p := c.port(ch); p != nil {
		*p = port
	}
}

func (c *ConnectionInfo) port(ch Channel) *int {
	switch ch {
	case Shell:
		return &c.ShellPort
	case IOPub:
		return &c.IOPubPort
	case Stdin:
		return &c.StdinPort
	case Control:
		return &c.ControlPort
	case Heartbeat:
		return &c.HBPort
	}
	return nil
}

// Unassigned returns the channels whose port is 0: the kernel is to pick
// them (and write them back to the connection file), as ipykernel does.
// A client can connect only once there are none.
func (c *ConnectionInfo) Unassigned() []Channel {
	var chs []Channel
	for _, ch := range Channels() {
		if c.Port(ch) == 0 {
			chs = append(chs, ch)
		}
	}
	return chs
}

// Validate checks the fields a kernel needs. A port may be 0 (see
// Unassigned).
func (c *ConnectionInfo) Validate() error {
	switch c.Transport {
	case "tcp", "ipc":
	default:
		return fmt.Errorf("wire: connection info: unsupported transport %q", c.Transport)
	}
	if c.IP == "" {
		return fmt.Errorf("wire: connection info: missing ip")
	}
	for _, ch := range Channels() {
		if p := c.Port(ch); p < 0 || p > 65535 {
			return fmt.Errorf("wire: connection info: bad %s_port %d", ch, p)
		}
	}
	if c.SignatureScheme != "" && c.SignatureScheme != SignatureScheme {
		return fmt.Errorf("wire: connection info: unsupported signature_scheme %q", c.SignatureScheme)
	}
	return nil
}

// ReadConnectionFile reads and validates a connection file.
func ReadConnectionFile(path string) (*ConnectionInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wire: read connection file: %w", err)
	}
	var c ConnectionInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("wire: parse connection file %s: %w", path, err)
	}
	if c.Transport == "" {
		c.Transport = "tcp"
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return &c, nil
}

// WriteConnectionFile writes c to path with mode 0600, atomically.
func WriteConnectionFile(path string, c *ConnectionInfo) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("wire: encode connection file: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".conn-*.json")
	if err != nil {
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("wire: write connection file: %w", err)
	}
	return nil
}

// NewKey returns a random signing key: 64 hex digits (256 bits).
func NewKey() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("wire: random key: %v", err)) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// NewConnectionInfo returns tcp connection info on ip with five free ports
// and a random key.
func NewConnectionInfo(ip string) (*ConnectionInfo, error) {
	if ip == "" {
		ip = "127.0.0.1"
	}
	ports, err := freePorts(ip, 5)
	if err != nil {
		return nil, err
	}
	return &ConnectionInfo{
		Transport:       "tcp",
		IP:              ip,
		ShellPort:       ports[0],
		IOPubPort:       ports[1],
		StdinPort:       ports[2],
		ControlPort:     ports[3],
		HBPort:          ports[4],
		SignatureScheme: SignatureScheme,
		Key:             NewKey(),
	}, nil
}

// NewIPCConnectionInfo returns ipc connection info whose sockets are the
// files path-1 … path-5, and a random key. The directory of path should be
// private to the kernel (mode 0700): nobody else can take its names, and
// nobody else can connect.
func NewIPCConnectionInfo(path string) *ConnectionInfo {
	return &ConnectionInfo{
		Transport:       "ipc",
		IP:              path,
		ShellPort:       1,
		IOPubPort:       2,
		StdinPort:       3,
		ControlPort:     4,
		HBPort:          5,
		SignatureScheme: SignatureScheme,
		Key:             NewKey(),
	}
}

// freePorts finds n distinct free TCP ports by binding them all at once and
// releasing them (the same race jupyter_client accepts: another process may
// take one before the kernel binds it; kernel/client notices that).
func freePorts(ip string, n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("wire: find free port on %s: %w", ip, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
