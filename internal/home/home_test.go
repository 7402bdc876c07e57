package home

import (
	"os/user"
	"testing"
)

// TestDirWithoutHOME: a kernel started by a gateway has no $HOME; its home
// is then the account's.
func TestDirWithoutHOME(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skip("this account has no home directory in the password database")
	}
	for _, h := range []string{"", "relative/home"} {
		t.Setenv("HOME", h)
		got, err := Dir()
		if err != nil || got != u.HomeDir {
			t.Errorf("HOME=%q: Dir() = %q, %v; want the account's %q", h, got, err, u.HomeDir)
		}
	}
	t.Setenv("HOME", "/somewhere/else")
	if got, _ := Dir(); got != "/somewhere/else" {
		t.Errorf("HOME set: Dir() = %q", got)
	}
}
