package app

import (
	"flag"
	"os"

	"github.com/agentkernel/agentkernel/backing"
	"github.com/agentkernel/agentkernel/store"
)

// StoreFlag is --store, on every command that opens the session store.
func StoreFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", "session store: a postgres:// `URL` (default $"+store.EnvStore+", then the config file's \"store\", else SQLite in the data directory)")
}

// BackingFlags are the flags that choose the backing kernel: its
// kernelspec, and the Jupyter server it runs on, if not this machine.
type BackingFlags struct {
	Kernel string
	// Dir is where the kernelspec was found at install (backing.Options.KernelDir).
	Dir string
	*GatewayFlags
}

// AddBackingFlags declares --backing, --backing-dir and the gateway flags on fs.
func AddBackingFlags(fs *flag.FlagSet, usage string) *BackingFlags {
	b := &BackingFlags{GatewayFlags: AddGatewayFlags(fs)}
	fs.StringVar(&b.Kernel, "backing", "python3", usage)
	fs.StringVar(&b.Dir, "backing-dir", "", "the backing kernelspec's `DIR`ectory, used when the search by name finds none "+
		"(install writes it for a kernelspec outside the system directories: a gateway starts kernels without $HOME or $JUPYTER_PATH)")
	return b
}

// GatewayFlags are the flags that run the backing kernel on a Jupyter
// server, beside Jupyter Server's own variables (JUPYTER_GATEWAY_URL, …),
// which they override.
type GatewayFlags struct {
	url, token, headers, validate *string
}

// AddGatewayFlags declares the gateway flags on fs.
func AddGatewayFlags(fs *flag.FlagSet) *GatewayFlags {
	return &GatewayFlags{
		url: fs.String("gateway-url", "", "run the backing kernel on the Jupyter server at `URL` "+
			"(Jupyter Server, Kernel or Enterprise Gateway; default $JUPYTER_GATEWAY_URL)"),
		token:    fs.String("gateway-auth-token", "", "the server's token (default $JUPYTER_GATEWAY_AUTH_TOKEN)"),
		headers:  fs.String("gateway-headers", "", "more HTTP headers, a JSON object (default $JUPYTER_GATEWAY_HEADERS)"),
		validate: fs.String("gateway-validate-cert", "", "check the server's TLS certificate: true or false (default $JUPYTER_GATEWAY_VALIDATE_CERT, else true)"),
	}
}

// env returns the gateway settings as Jupyter Server's variables: the
// environment's, with the flags over them.
func (g *GatewayFlags) env() map[string]string {
	out := map[string]string{}
	for _, v := range []struct {
		name string
		flag *string
	}{
		{"JUPYTER_GATEWAY_URL", g.url}, {"JUPYTER_GATEWAY_AUTH_TOKEN", g.token},
		{"JUPYTER_GATEWAY_HEADERS", g.headers}, {"JUPYTER_GATEWAY_VALIDATE_CERT", g.validate},
		{"JUPYTER_GATEWAY_CONNECT_TIMEOUT", nil}, {"JUPYTER_GATEWAY_REQUEST_TIMEOUT", nil},
	} {
		if v.flag != nil && *v.flag != "" {
			out[v.name] = *v.flag
		} else if e := os.Getenv(v.name); e != "" {
			out[v.name] = e
		}
	}
	return out
}

// GatewayEnv returns the gateway flags that were given, as Jupyter
// Server's variables, for a kernel process (which inherits the rest).
func (g *GatewayFlags) GatewayEnv() []string {
	var out []string
	for _, v := range []struct {
		name string
		flag *string
	}{{"JUPYTER_GATEWAY_URL", g.url}, {"JUPYTER_GATEWAY_AUTH_TOKEN", g.token},
		{"JUPYTER_GATEWAY_HEADERS", g.headers}, {"JUPYTER_GATEWAY_VALIDATE_CERT", g.validate}} {
		if *v.flag != "" {
			out = append(out, v.name+"="+*v.flag)
		}
	}
	return out
}

// Options returns the backing runner's options the flags give: the
// kernelspec, where install found it, and the gateway; owner is the chain
// mark's (backing.Options.Owner). The caller adds the rest.
func (b *BackingFlags) Options(owner string) (*backing.Options, error) {
	gw, err := b.Gateway()
	if err != nil {
		return nil, err
	}
	return &backing.Options{Kernel: b.Kernel, KernelDir: b.Dir, Owner: owner, Gateway: gw}, nil
}

// Gateway returns the Jupyter server to run the backing kernel on (the
// flags over Jupyter Server's variables), or nil for this machine.
func (g *GatewayFlags) Gateway() (*backing.Gateway, error) {
	env := g.env()
	gw, ok, err := backing.GatewayFromEnv(func(k string) string { return env[k] })
	if err != nil || !ok {
		return nil, err
	}
	return &gw, nil
}
