package main

import (
	"io"
	"reflect"
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
