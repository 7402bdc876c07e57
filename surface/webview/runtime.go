package webview

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Running describes a web panel from its runtime file.
type Running struct {
	URL     string            `json:"url"`
	PID     int               `json:"pid"`
	Started time.Time         `json:"started"`
	Info    map[string]string `json:"info,omitempty"`
	// File is the runtime file's path; Alive whether its process runs.
	File  string `json:"-"`
	Alive bool   `json:"-"`
}

const runtimePrefix = "agentkernel-webview-"

// writeRuntimeFile writes the panel's runtime file (mode 0600: the URL
// holds the token) and returns its path.
func writeRuntimeFile(dir, url string, info map[string]string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("webview: runtime dir: %w", err)
	}
	data, err := json.MarshalIndent(Running{URL: url, PID: os.Getpid(), Started: time.Now().UTC(), Info: info}, "", "  ")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, runtimePrefix+fmt.Sprint(os.Getpid())+"-*.json")
	if err != nil {
		return "", fmt.Errorf("webview: runtime file: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("webview: runtime file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("webview: runtime file: %w", err)
	}
	return f.Name(), nil
}

// ListRunning reads the panels' runtime files in dir (Jupyter's runtime
// directory), newest first. A file whose process is gone is listed with
// Alive false (a kernel that was killed could not remove it). Unreadable
// files are skipped; a missing dir is an empty list.
func ListRunning(dir string) ([]Running, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("webview: list %s: %w", dir, err)
	}
	var out []Running
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, runtimePrefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r Running
		if json.Unmarshal(data, &r) != nil || r.URL == "" {
			continue
		}
		r.File = path
		r.Alive = processAlive(r.PID)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
