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
		return fmt.Sprintf("ipc://%s-%d", c.IP, port)
	}
	return fmt.Sprintf("tcp://%s", net.JoinHostPort(c.IP, fmt.Sprint(port)))
}

// Validate checks the fields a kernel needs.
func (c *ConnectionInfo) Validate() error {
	switch c.Transport {
	case "tcp", "ipc":
	default:
		return fmt.Errorf("wire: connection info: unsupported transport %q", c.Transport)
	}
	if c.IP == "" {
		return fmt.Errorf("wire: connection info: missing ip")
	}
	for _, p := range []struct {
		name string
		port int
	}{{"shell_port", c.ShellPort}, {"iopub_port", c.IOPubPort}, {"stdin_port", c.StdinPort},
		{"control_port", c.ControlPort}, {"hb_port", c.HBPort}} {
		if p.port <= 0 || p.port > 65535 {
			return fmt.Errorf("wire: connection info: bad %s %d", p.name, p.port)
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

// freePorts finds n distinct free TCP ports by binding them all at once and
// releasing them (the same race jupyter_client accepts).
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
