package client

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentkernel/agentkernel/kernel/wire"
)

// tcpProber returns probeTCP: Linux tells who listens on a port.
func tcpProber() prober { return probeTCP }

// probeTCP tells who listens on conn's tcp ports: the kernel (a process of
// group pgid holds the listening socket), another process (which socket),
// or nobody.
// Linux lists the listening sockets of this network namespace in
// /proc/net/tcp and tcp6 with their inodes, and the sockets a process
// holds in /proc/PID/fd.
func probeTCP(conn *wire.ConnectionInfo, pgid int) (look, error) {
	ports := map[int]bool{}
	for _, ch := range wire.Channels() {
		ports[conn.Port(ch)] = true
	}
	ip := net.ParseIP(conn.IP)
	listeners := map[int][]uint64{} // port → inodes of the sockets listening there
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := readListeners(f, ip, ports, listeners); err != nil {
			if f == "/proc/net/tcp6" && os.IsNotExist(err) {
				continue // no IPv6
			}
			return look{}, err
		}
	}
	var owned map[uint64]bool
	if len(listeners) > 0 {
		owned = groupSockets(pgid, listeners)
	}
	l := look{bound: map[wire.Channel]bool{}, holders: map[wire.Channel]uint64{}, binding: runsZMQ(pgid)}
	for _, ch := range wire.Channels() {
		for _, ino := range listeners[conn.Port(ch)] {
			if owned[ino] {
				l.bound[ch] = true
				delete(l.holders, ch)
				break
			}
			l.holders[ch] = ino
		}
	}
	return l, nil
}

// runsZMQ reports whether a process of group pgid runs libzmq's I/O
// threads (named ZMQbg/…): a kernel starts ZeroMQ just before it binds.
// The leader is looked at first; the rest of the group only when it does
// not (it may be a wrapper).
func runsZMQ(pgid int) bool {
	if hasZMQThreads(pgid) {
		return true
	}
	for _, pid := range groupMembers(pgid) {
		if hasZMQThreads(pid) {
			return true
		}
	}
	return false
}

func hasZMQThreads(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tasks {
		comm, err := os.ReadFile(filepath.Join(dir, t.Name(), "comm"))
		if err == nil && bytes.HasPrefix(comm, []byte("ZMQbg/")) {
			return true
		}
	}
	return false
}

// groupMembers returns the processes of group pgid but its leader. A
// leader that has no children (the usual kernel) spares the scan of every
// process.
func groupMembers(pgid int) []int {
	if noChildren(pgid) {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != pgid && processGroup(pid) == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readListeners adds the inodes of the sockets in file (/proc/net/tcp's
// format) that listen on one of ports at ip or at the wildcard address.
func readListeners(file string, ip net.IP, ports map[int]bool, into map[int][]uint64) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil || !ports[int(port)] {
			continue
		}
		if local, err := procAddr(addr); err != nil || !(local.IsUnspecified() || ip == nil || local.Equal(ip)) {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		into[int(port)] = append(into[int(port)], ino)
	}
	return sc.Err()
}

// procAddr decodes an address of /proc/net/tcp: 32-bit words in hex, each
// the host-order value of four bytes of the address.
func procAddr(s string) (net.IP, error) {
	raw, err := hex.DecodeString(s)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, fmt.Errorf("bad address %q", s)
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip, nil
}

// groupSockets returns the inodes of the sockets held by the processes of
// group pgid: its leader's (a kernel usually binds in its own process),
// and the rest of the group's only when the leader does not hold every
// listener (it may be a wrapper, or another process holds one).
func groupSockets(pgid int, listeners map[int][]uint64) map[uint64]bool {
	owned := map[uint64]bool{}
	addSockets(pgid, owned)
	all := true
	for _, inodes := range listeners {
		for _, ino := range inodes {
			all = all && owned[ino]
		}
	}
	if all {
		return owned
	}
	for _, pid := range groupMembers(pgid) {
		addSockets(pid, owned)
	}
	return owned
}

// processGroup returns pid's process group, or 0 when it cannot be read.
func processGroup(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0
	}
	pgrp, _ := strconv.Atoi(f[2])
	return pgrp
}

// addSockets adds the inodes of the sockets pid holds.
func addSockets(pid int, into map[uint64]bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(link, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
				into[ino] = true
			}
		}
	}
}

// noChildren reports whether pid is known to have no child process: none
// of its threads' /proc/PID/task/TID/children lists one. False when that
// cannot be told (a kernel built without CONFIG_PROC_CHILDREN).
func noChildren(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			return false
		}
	}
	return true
}
