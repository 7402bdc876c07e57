package main

import (
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestSplitKernelArgs(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		ours, passed []string
	}{
		{"ours only", []string{"-f", "c.json", "--backing", "python3", "--mode=code"},
			[]string{"-f", "c.json", "--backing", "python3", "--mode=code"}, nil},
		{"nbclient's history option", []string{"-f", "c.json", "--HistoryManager.hist_file=:memory:"},
			[]string{"-f", "c.json"}, []string{"--HistoryManager.hist_file=:memory:"}},
		{"traitlets options in any place", []string{"--IPKernelApp.pylab=inline", "-f", "c.json", "--matplotlib=inline", "--mode", "prompt", "--debug"},
			[]string{"-f", "c.json", "--mode", "prompt"}, []string{"--IPKernelApp.pylab=inline", "--matplotlib=inline", "--debug"}},
		{"a separate value stays with its option", []string{"--matplotlib", "inline", "-f", "c.json"},
			[]string{"-f", "c.json"}, []string{"--matplotlib", "inline"}},
		{"after --", []string{"-f", "c.json", "--", "--backing", "x"},
			[]string{"-f", "c.json"}, []string{"--backing", "x"}},
		{"a flag of ours at the end without its value", []string{"--model"}, []string{"--model"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("kernel", "kernel", io.Discard)
			fs.String("f", "", "")
			fs.String("backing", "", "")
			fs.String("mode", "", "")
			fs.String("model", "", "")
			ours, passed := splitKernelArgs(fs, tt.args)
			if !reflect.DeepEqual(ours, tt.ours) || !reflect.DeepEqual(passed, tt.passed) {
				t.Fatalf("splitKernelArgs(%q)\n ours   %q, want %q\n passed %q, want %q", tt.args, ours, tt.ours, passed, tt.passed)
			}
		})
	}
}

// TestKernelNeedsOneWayIn: a kernel is given a connection file or Enterprise
// Gateway's launcher arguments, not neither and not both; EG's variables
// in the environment count only without -f.
func TestKernelNeedsOneWayIn(t *testing.T) {
	for _, name := range []string{"KERNEL_ID", "RESPONSE_ADDRESS", "EG_RESPONSE_ADDRESS", "PUBLIC_KEY", "PORT_RANGE"} {
		t.Setenv(name, "")
	}
	// runKernel would run the rest of this test binary on one processor.
	t.Setenv("GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)))
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"neither", nil, nil, "-f CONNECTION_FILE is required"},
		{"both", []string{"-f", "c.json", "--RemoteProcessProxy.response-address", "10.0.0.1:8877"}, nil, "exclude each other"},
		{"EG from the environment", nil, map[string]string{"RESPONSE_ADDRESS": "10.0.0.1:8877", "PUBLIC_KEY": "Zm9v"},
			"launched by Enterprise Gateway: eglaunch: no kernel id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := runKernel(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("runKernel(%q) = %v, want an error with %q", tc.args, err, tc.wantErr)
			}
		})
	}
}
