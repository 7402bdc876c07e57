package notebooks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead checks that Parse never panics, and that whatever it accepts
// can be written and read back to the same bytes.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.ipynb")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code", "source": ["a", "b"], "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}]}]}`))
	f.Add([]byte(`{"nbformat": 4, "nbformat_minor": 2, "metadata": {"a": [1e5, -0.0, "\u2028"]}, "cells": []}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		nb, err := Parse(b)
		if err != nil {
			return
		}
		out, err := Marshal(nb)
		if err != nil {
			t.Fatalf("Marshal of a parsed notebook: %v", err)
		}
		nb2, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of our own output: %v\n%s", err, out)
		}
		out2, err := Marshal(nb2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("not a fixed point:\n%s\n---\n%s", out, out2)
		}
	})
}
