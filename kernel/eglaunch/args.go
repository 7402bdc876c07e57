package eglaunch

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Options are the launcher arguments EG gives a kernel. The zero value
// means "not launched by EG".
type Options struct {
	// KernelID is EG's id of the kernel; it comes back in the connection
	// info so that EG can tell whose reply it is.
	KernelID string
	// ResponseAddress is where the connection info goes: host:port.
	ResponseAddress string
	// PublicKey is EG's RSA public key: the base64 DER body of its PEM, as
	// EG substitutes {public_key}. A whole PEM block is accepted too.
	PublicKey string
	// PortRange is "lower..upper", or "" or "0..0" for any port.
	PortRange string
}

// Enabled reports whether the kernel was launched by EG: it has somewhere
// to send its connection info.
func (o Options) Enabled() bool { return o.ResponseAddress != "" }

// Or returns o with its empty fields taken from other.
func (o Options) Or(other Options) Options {
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&o.KernelID, other.KernelID}, {&o.ResponseAddress, other.ResponseAddress},
		{&o.PublicKey, other.PublicKey}, {&o.PortRange, other.PortRange},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
	return o
}

// argument is one of EG's launcher arguments: where its value goes, or
// nowhere for those agentkernel has no use for (Spark and Dask set-up,
// ipykernel's kernel class), which are taken off the command line all the
// same so that they do not reach the backing kernel.
type argument struct {
	deprecated bool // the RemoteProcessProxy. spelling
	field      func(*Options) *string
}

var arguments = func() map[string]argument {
	m := map[string]argument{}
	for name, field := range map[string]func(*Options) *string{
		"kernel-id":                         func(o *Options) *string { return &o.KernelID },
		"response-address":                  func(o *Options) *string { return &o.ResponseAddress },
		"public-key":                        func(o *Options) *string { return &o.PublicKey },
		"port-range":                        func(o *Options) *string { return &o.PortRange },
		"spark-context-initialization-mode": nil,
		"cluster-type":                      nil,
	} {
		m[name] = argument{field: field}
		m["RemoteProcessProxy."+name] = argument{deprecated: true, field: field}
	}
	m["kernel-class-name"] = argument{}
	return m
}()

// SplitArgs takes EG's launcher arguments out of args and returns them and
// the other arguments, in order. It reads them as launch_ipykernel.py's
// argparse does: "--name value" or "--name=value" (one dash works too, as
// for Go flags), in the current spelling (--kernel-id, --response-address,
// --public-key, --port-range) or the older --RemoteProcessProxy. one, the
// current spelling winning when both are given; a name followed by another
// option or by nothing has no value (a shell variable that was empty).
// Everything from a "--" on is left alone. --spark-context-initialization-mode,
// --cluster-type and --kernel-class-name are taken out and ignored.
func SplitArgs(args []string) (Options, []string) {
	var short, deprecated Options
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		arg, ok := arguments[name]
		if !ok || !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			value = args[i]
		}
		if arg.field == nil {
			continue
		}
		into := &short
		if arg.deprecated {
			into = &deprecated
		}
		*arg.field(into) = value
	}
	return short.Or(deprecated), rest
}

// FromEnv returns the options from the environment EG's Kubernetes,
// Docker and operator launchers give a kernel's container, with the
// fallbacks of EG's kernel image bootstrap: KERNEL_ID, RESPONSE_ADDRESS
// (or EG_RESPONSE_ADDRESS), PUBLIC_KEY (or EG_PUBLIC_KEY) and PORT_RANGE
// (or EG_PORT_RANGE).
func FromEnv(getenv func(string) string) Options {
	first := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return Options{KernelID: getenv("KERNEL_ID"), ResponseAddress: first("RESPONSE_ADDRESS", "EG_RESPONSE_ADDRESS"),
		PublicKey: first("PUBLIC_KEY", "EG_PUBLIC_KEY"), PortRange: first("PORT_RANGE", "EG_PORT_RANGE")}
}

// MinPortRangeSizeFromEnv returns the smallest port range EG allows as EG
// passes it to its launchers (MIN_PORT_RANGE_SIZE, then
// EG_MIN_PORT_RANGE_SIZE), or 0 when neither is set or is a number.
func MinPortRangeSizeFromEnv(getenv func(string) string) int {
	for _, name := range []string{"MIN_PORT_RANGE_SIZE", "EG_MIN_PORT_RANGE_SIZE"} {
		if n, err := strconv.Atoi(strings.TrimSpace(getenv(name))); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// portRange is an inclusive range of ports; lower == upper == 0 is any port.
type portRange struct{ lower, upper int }

func (r portRange) any() bool { return r.lower == 0 && r.upper == 0 }

func (r portRange) String() string { return fmt.Sprintf("%d..%d", r.lower, r.upper) }

// parsePortRange reads "lower..upper" as EG does: "" and a range of size
// 0 mean any port; a narrower range than minSize is refused.
func parsePortRange(s string, minSize int) (portRange, error) {
	if strings.TrimSpace(s) == "" {
		return portRange{}, nil
	}
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "..")
	lower, err1 := strconv.Atoi(lo)
	upper, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || lower < 0 || upper > 65535 || lower > upper {
		return portRange{}, fmt.Errorf("eglaunch: port range %q: want LOWER..UPPER with 0 <= LOWER <= UPPER <= 65535", s)
	}
	if lower == upper {
		return portRange{}, nil // EG: a range of size 0 is no range
	}
	if upper-lower < minSize {
		return portRange{}, fmt.Errorf("eglaunch: port range %q: the range must span at least %d ports "+
			"(EG_MIN_PORT_RANGE_SIZE)", s, minSize)
	}
	return portRange{lower, upper}, nil
}

// checkResponseAddress checks that addr is host:port with a port number,
// the only form EG sends (its launchers' "pull mode" is not supported).
func checkResponseAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n <= 0 || n > 65535 || host == "") {
			err = fmt.Errorf("want HOST:PORT")
		}
	}
	if err != nil {
		return fmt.Errorf("eglaunch: response address %q: %w", addr, err)
	}
	return nil
}
