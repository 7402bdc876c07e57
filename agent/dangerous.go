package agent

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// This file: the dangerous commands and code every mode refuses.

// DangerousCode returns why code is refused in every mode, or "" if it is
// not. It is a screen for the well-known ways to wreck a machine, not a
// sandbox: code assembled at run time (variables, f-strings, getattr) gets
// through, which is why execute_code is asked in the default mode.
//
// Refused, as shell commands (IPython "!cmd" and "var = !cmd" lines,
// %%bash / %%sh / %%script cells, %sx and %system, plain lines of a shell
// kernel, "sh -c" / "bash -c" / eval strings, and the string literals of
// Python code that calls os.system, os.popen, os.exec*, os.spawn*,
// subprocess, get_ipython().system and the like — a list of literals as in
// subprocess.run(["rm", "-rf", "/"]) is joined into one command):
//
//   - rm recursive on /, /*, ~, $HOME or a top-level system directory
//     (/usr, /etc, …), and any command with --no-preserve-root;
//   - chmod / chown / chgrp recursive on the same targets;
//   - find on the same targets with -delete or -exec rm;
//   - mkfs, mkfs.*, mke2fs, mkswap, wipefs;
//   - writes to a disk device: dd of=/dev/sd…, > /dev/sd…, tee, cp or
//     shred onto one (sd, hd, vd, xvd, nvme, mmcblk, disk);
//   - shutdown, reboot, halt, poweroff, init 0/6, systemctl poweroff|reboot|halt;
//   - fork bombs such as :(){ :|:& };: .
//
// Refused as Python: shutil.rmtree (or rmtree) of one of those targets or
// of the home directory (os.path.expanduser("~"), Path.home(),
// os.environ["HOME"], os.getenv("HOME")); open() of a disk device for
// writing; os.fork() in a "while True" / "while 1" loop.
//
// Not refused (left to the approval): rm -rf ./build, rm -rf /tmp/x,
// dd if=/dev/zero of=out.img, reading a disk device, Python names such as
// "reboot = True" or "shutdown()".
func DangerousCode(code string) string {
	if why := forkBomb(code); why != "" {
		return why
	}
	if why := pythonDanger(code); why != "" {
		return why
	}
	for _, cmd := range shellCandidates(code) {
		if why := dangerousShell(cmd, 0); why != "" {
			return why
		}
	}
	return ""
}

var (
	cellMagicShellRE = regexp.MustCompile(`^%%(?:bash|sh|zsh|system|sx|script\s+(?:\S*/)?(?:ba|z|da|k)?sh)\b`)
	lineMagicShellRE = regexp.MustCompile(`^(?:[\w\s,.\[\]]+=\s*)?(?:!!?|%sx\s|%system\s|%%sx\s)\s*`)
	pyExecRE         = regexp.MustCompile(`\b(?:os\.(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*)|subprocess|system\s*\(|popen\s*\(|getoutput|getstatusoutput|check_output|check_call|Popen|run_cell_magic|pty\.spawn)`)
	pyStrRE          = `[rRbBuUfF]{0,2}(?:'[^'\\\n]*'|"[^"\\\n]*")`
	pyStrListRE      = regexp.MustCompile(`[\[(]\s*(?:` + pyStrRE + `\s*,\s*)*` + pyStrRE + `\s*,?\s*[\])]`)
	pyStrLitRE       = regexp.MustCompile(pyStrRE)
	forkBombRE       = regexp.MustCompile(`([^\s(){}|&;!]+)\s*\(\s*\)\s*\{\s*([^\s(){}|&;]+)\s*\|\s*([^\s(){}|&;]+)\s*&\s*;?\s*\}`)
	pyForkLoopRE     = regexp.MustCompile(`while\s*\(?\s*(?:True|1)\s*\)?\s*:`)
	pyForkRE         = regexp.MustCompile(`\bos\.fork\s*\(|\bfork\s*\(\s*\)`)
	diskRE           = `/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d)`
	diskWriteRE      = regexp.MustCompile(`(?:>\|?|\bof=)\s*['"]?` + diskRE)
	diskPathRE       = regexp.MustCompile(`^` + diskRE)
	pyOpenDiskRE     = regexp.MustCompile(`\bopen\s*\(\s*[rRbBfF]?['"]` + diskRE + `[^'"]*['"]\s*,\s*(?:mode\s*=\s*)?[rRbBfF]?['"][^'"]*[wa+x]`)
	rmtreeRE         = regexp.MustCompile(`\brmtree\s*\(`)
	pyHomeRE         = regexp.MustCompile(`^(?:os\.path\.)?expanduser\(['"]~/?['"]\)$|^(?:pathlib\.)?Path\.home\(\)$|^(?:pathlib\.)?Path\(['"]~/?['"]\)\.expanduser\(\)$|^os\.environ\[['"]HOME['"]\]$|^os\.environ\.get\(['"]HOME['"].*\)$|^os\.getenv\(['"]HOME['"].*\)$`)
	assignRE         = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	pyPathLitRE      = regexp.MustCompile(`^(?:pathlib\.)?Path\((` + pyStrRE + `)\)$`)
)

func forkBomb(code string) string {
	// The strings.Contains calls are cheap filters in front of the regexps.
	if strings.Contains(code, "{") && strings.Contains(code, "|") && strings.Contains(code, "&") {
		for _, m := range forkBombRE.FindAllStringSubmatch(code, -1) {
			if m[1] == m[2] && m[2] == m[3] {
				return "fork bomb"
			}
		}
	}
	if strings.Contains(code, "fork") && pyForkRE.MatchString(code) && pyForkLoopRE.MatchString(code) {
		return "fork bomb (os.fork in an endless loop)"
	}
	return ""
}

func pythonDanger(code string) string {
	if strings.Contains(code, "/dev/") && pyOpenDiskRE.MatchString(code) {
		return "writes to a disk device"
	}
	if !strings.Contains(code, "rmtree") {
		return ""
	}
	for _, loc := range rmtreeRE.FindAllStringIndex(code, -1) {
		arg := firstArg(code[loc[1]:])
		if pyHomeRE.MatchString(arg) {
			return "shutil.rmtree of the home directory"
		}
		lit := arg
		if m := pyPathLitRE.FindStringSubmatch(arg); m != nil {
			lit = m[1]
		}
		if pyStrLitRE.FindString(lit) == lit && lit != "" {
			if t := unquotePy(lit); dangerousTarget(t) {
				return fmt.Sprintf("shutil.rmtree(%q)", t)
			}
		}
	}
	return ""
}

// firstArg returns the first argument of a call whose opening parenthesis
// has been consumed, with white space removed.
func firstArg(s string) string {
	depth, quote := 0, byte(0)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return b.String()
			}
			depth--
		case c == ',' && depth == 0:
			return b.String()
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isCallee reports whether c can end the expression a call applies to.
func isCallee(c byte) bool {
	return c == '_' || c == ')' || c == ']' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func unquotePy(lit string) string {
	lit = strings.TrimLeft(lit, "rRbBuUfF")
	if len(lit) >= 2 {
		return lit[1 : len(lit)-1]
	}
	return lit
}

// shellCandidates returns the pieces of code that may run as shell commands.
func shellCandidates(code string) []string {
	code = strings.ReplaceAll(code, "\\\n", " ")
	lines := strings.Split(code, "\n")
	var out []string
	shellCell := false
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if i == 0 || (!shellCell && strings.HasPrefix(t, "%%")) {
			if cellMagicShellRE.MatchString(t) {
				shellCell = true
				continue
			}
		}
		if !shellCell && strings.ContainsAny(t, "!%") {
			t = lineMagicShellRE.ReplaceAllString(t, "")
		}
		if t != "" {
			out = append(out, t)
		}
	}
	if pyExecRE.MatchString(code) {
		// A list or tuple of literals is an argv: join it. The arguments
		// of a call ("f('a', 'b')") are separate strings.
		var rest strings.Builder
		prev := 0
		for _, loc := range pyStrListRE.FindAllStringIndex(code, -1) {
			if code[loc[0]] == '(' && loc[0] > 0 && isCallee(code[loc[0]-1]) {
				continue
			}
			var words []string
			for _, lit := range pyStrLitRE.FindAllString(code[loc[0]:loc[1]], -1) {
				words = append(words, unquotePy(lit))
			}
			out = append(out, strings.Join(words, " "))
			rest.WriteString(code[prev:loc[0]])
			rest.WriteString(" ")
			prev = loc[1]
		}
		rest.WriteString(code[prev:])
		for _, lit := range pyStrLitRE.FindAllString(rest.String(), -1) {
			out = append(out, unquotePy(lit))
		}
	}
	return out
}

// dangerousShell checks one piece of shell text.
func dangerousShell(cmd string, depth int) string {
	if depth > 3 {
		return ""
	}
	if strings.Contains(cmd, "/dev/") && diskWriteRE.MatchString(cmd) {
		return "writes to a disk device"
	}
	for _, seg := range splitShell(cmd) {
		argv := skipWrappers(seg)
		if len(argv) == 0 {
			continue
		}
		name, args := path.Base(argv[0]), argv[1:]
		if slices.Contains(args, "--no-preserve-root") {
			return fmt.Sprintf("%s --no-preserve-root", name)
		}
		switch {
		case name == "rm":
			if recursiveFlag(args) && anyTarget(args) {
				return "recursive rm of " + firstTarget(args)
			}
		case name == "chmod" || name == "chown" || name == "chgrp":
			if recursiveFlag(args) && anyTarget(args) {
				return fmt.Sprintf("recursive %s of %s", name, firstTarget(args))
			}
		case name == "find":
			if len(args) > 0 && dangerousTarget(args[0]) &&
				(slices.Contains(args, "-delete") || (slices.Contains(args, "-exec") && slices.Contains(args, "rm"))) {
				return "find deleting from " + args[0]
			}
		case name == "mkfs" || strings.HasPrefix(name, "mkfs.") || name == "mke2fs" || name == "mkswap" || name == "wipefs":
			return name + " (formats a file system)"
		case name == "tee" || name == "cp" || name == "shred":
			for _, a := range args {
				if diskPathRE.MatchString(a) {
					return fmt.Sprintf("%s onto a disk device (%s)", name, a)
				}
			}
		case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff":
			if len(args) == 0 || !strings.HasPrefix(args[0], "=") {
				return name
			}
		case name == "init" || name == "telinit":
			if len(args) > 0 && (args[0] == "0" || args[0] == "6") {
				return name + " " + args[0]
			}
		case name == "systemctl":
			for _, a := range args {
				if a == "poweroff" || a == "reboot" || a == "halt" || a == "kexec" {
					return "systemctl " + a
				}
			}
		case name == "sh" || name == "bash" || name == "zsh" || name == "dash" || name == "ksh" || name == "su":
			for i, a := range args {
				if a == "-c" && i+1 < len(args) {
					if why := dangerousShell(args[i+1], depth+1); why != "" {
						return why
					}
				}
			}
		case name == "eval":
			if why := dangerousShell(strings.Join(args, " "), depth+1); why != "" {
				return why
			}
		}
	}
	return ""
}

// splitShell splits shell text into simple commands (at ; & | newlines,
// parentheses and backquotes) of words, with quotes removed.
func splitShell(s string) [][]string {
	var segs [][]string
	var words []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endSeg := func() {
		endWord()
		if len(words) > 0 {
			segs = append(segs, words)
			words = nil
		}
	}
	var quote rune
	esc := false
	for _, c := range s {
		switch {
		case esc:
			w.WriteRune(c)
			esc = false
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				esc = true
			} else {
				w.WriteRune(c)
			}
		case c == '\\':
			esc, inWord = true, true
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '(' && inWord:
			// "name(": a function call or definition, not a command.
			w.WriteRune(c)
			endSeg()
		case strings.ContainsRune(";&|\n()`", c):
			endSeg()
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	endSeg()
	return segs
}

var (
	wrappers = []string{"sudo", "doas", "env", "nohup", "nice", "ionice", "time",
		"command", "builtin", "exec", "stdbuf", "xargs", "timeout", "then", "do", "else", "{", "}", "!"}
	// wrapperArgFlags are the wrappers' options that take an argument
	// (sudo -u USER, nice -n N, xargs -I X, …).
	wrapperArgFlags = []string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-n", "-s", "-P", "-I"}
)

// skipWrappers drops what comes before the command itself: variable
// assignments, sudo, env, nohup, time, xargs and their options.
func skipWrappers(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case assignRE.MatchString(w):
			words = words[1:]
		case slices.Contains(wrappers, path.Base(w)):
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				flag := words[0]
				words = words[1:]
				if slices.Contains(wrapperArgFlags, flag) && len(words) > 0 {
					words = words[1:]
				}
			}
			if path.Base(w) == "timeout" && len(words) > 0 && words[0] != "" && words[0][0] >= '0' && words[0][0] <= '9' {
				words = words[1:]
			}
		default:
			return words
		}
	}
	return nil
}

func recursiveFlag(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--recursive" {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR") {
			return true
		}
	}
	return false
}

func targets(args []string) []string {
	var out []string
	flags := true
	for _, a := range args {
		switch {
		case flags && a == "--":
			flags = false
		case flags && strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

func anyTarget(args []string) bool { return firstTarget(args) != "" }

func firstTarget(args []string) string {
	for _, t := range targets(args) {
		if dangerousTarget(t) {
			return t
		}
	}
	return ""
}

var systemDirs = []string{"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt",
	"proc", "root", "sbin", "srv", "sys", "usr", "var", "Users", "System", "Library", "Applications"}

// dangerousTarget reports whether a path is one that must never be
// deleted or re-permissioned wholesale: the root, the home directory or a
// top-level system directory.
func dangerousTarget(t string) bool {
	t = strings.Trim(strings.TrimSpace(t), `"'`)
	if t == "" {
		return false
	}
	t = strings.TrimSuffix(t, "/*")
	if t == "" {
		return true // "/*"
	}
	t = path.Clean(t)
	switch t {
	case "/", "~", "$HOME", "${HOME}", "~root":
		return true
	}
	if rest, ok := strings.CutPrefix(t, "/"); ok && !strings.Contains(rest, "/") {
		return slices.Contains(systemDirs, rest)
	}
	return false
}
