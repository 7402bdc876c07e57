package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentkernel/agentkernel/app"
	"github.com/agentkernel/agentkernel/kernel/client"
	"github.com/agentkernel/agentkernel/notebooks"
	"github.com/agentkernel/agentkernel/store"
)

func (c *sessionsCmd) export(ctx context.Context, ref, format, out, kernelName string) error {
	if format != "jsonl" && format != "ipynb" {
		return fmt.Errorf("--format %q: want jsonl or ipynb", format)
	}
	s, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	var ks *notebooks.KernelspecMeta
	if kernelName != "" {
		if format != "ipynb" {
			return errors.New("--kernel applies to --format ipynb only")
		}
		spec, err := client.FindSpec(kernelName)
		if err != nil {
			return err
		}
		ks = &notebooks.KernelspecMeta{Name: spec.Name, DisplayName: spec.DisplayName, Language: spec.Language}
	}
	if format == "jsonl" {
		if out == "" || out == "-" {
			return c.st.Export(ctx, s.ID, c.stdout)
		}
		return writeAtomic(out, func(w io.Writer) error { return c.st.Export(ctx, s.ID, w) })
	}
	h, err := c.st.Load(ctx, s.ID)
	if err != nil {
		return err
	}
	nb, err := app.SessionNotebook(s, h, ks)
	if err != nil {
		return err
	}
	if out == "" || out == "-" {
		return notebooks.Write(c.stdout, nb)
	}
	return notebooks.WriteFile(out, nb)
}

// writeAtomic writes path through a temporary file in its directory,
// renamed over it when write succeeds; on failure path is untouched.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (c *sessionsCmd) importFile(ctx context.Context, path string) error {
	var r io.Reader = c.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	s, err := c.st.Import(ctx, r)
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: the session in %s is already in the store (rm --purge it first to replace it)", err, path)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(toJSON(s))
	}
	fmt.Fprintf(c.stdout, "Imported session %s (%s)\n", s.ID, s.Title)
	return nil
}
