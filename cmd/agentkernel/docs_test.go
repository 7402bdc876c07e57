package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readme returns the repository's README.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeNamesEveryCommand: the commands `agentkernel help` lists are the
// ones the README's Usage block names, and the reverse.
func TestReadmeNamesEveryCommand(t *testing.T) {
	usage := readme(t)
	start := strings.Index(usage, "## Usage")
	if start < 0 {
		t.Fatal("no Usage section in the README")
	}
	block := usage[start:]
	block = block[strings.Index(block, "```")+3:]
	block = block[:strings.Index(block, "```")]
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^agentkernel ([a-z-]+)`).FindAllStringSubmatch(block, -1) {
		if m[1] != "COMMAND" && !slices.Contains(documented, m[1]) {
			documented = append(documented, m[1])
		}
	}
	var listed []string
	for _, c := range commands {
		if !c.Hidden {
			listed = append(listed, c.Name)
		}
	}
	slices.Sort(documented)
	slices.Sort(listed)
	if !slices.Equal(documented, listed) {
		t.Errorf("README's Usage names %v; agentkernel help lists %v", documented, listed)
	}
}
