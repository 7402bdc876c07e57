package procguard

// watcher is the watcher's program, run by /bin/sh -c: POSIX sh and its
// kill builtin, nothing else until the end (a sleep between checks).
//
// It reads "+PGID" (a group started) and "-PGID" (a group over) lines
// from stdin, keeping the groups in $gs, space separated. When stdin ends
// (this process ended, however it ended) it sends SIGTERM to each group,
// checks every 0.1 s for 2 s whether any of them still has a process, and
// sends SIGKILL to those that do. It ignores the signals that stop
// processes wholesale, so that it does not end before its work is done.
const watcher = `trap '' HUP INT QUIT TERM PIPE
gs=' '
while read -r line; do
	case $line in
	+*) gs="$gs${line#+} " ;;
	-*)
		g=${line#-}
		case $gs in *" $g "*) gs="${gs%% $g *} ${gs#* $g }" ;; esac
		;;
	esac
done
[ "$gs" = ' ' ] && exit 0
for g in $gs; do kill -TERM -$g 2>/dev/null; done
n=0
while [ $n -lt 20 ]; do
	left=
	for g in $gs; do kill -0 -$g 2>/dev/null && left=1; done
	[ -z "$left" ] && exit 0
	sleep 0.1
	n=$((n + 1))
done
for g in $gs; do kill -KILL -$g 2>/dev/null; done
`
