package main

import (
	"flag"
	"os"

	"github.com/agentkernel/agentkernel/backing"
)

// gatewayFlags are the flags that run the backing kernel on a Jupyter
// server, beside Jupyter Server's own variables (JUPYTER_GATEWAY_URL, …),
// which they override.
type gatewayFlags struct {
	url, token, headers, validate *string
}

func addGatewayFlags(fs *flag.FlagSet) *gatewayFlags {
	return &gatewayFlags{
		url: fs.String("gateway-url", "", "run the backing kernel on the Jupyter server at `URL` "+
			"(Jupyter Server, Kernel or Enterprise Gateway; default $JUPYTER_GATEWAY_URL)"),
		token:    fs.String("gateway-auth-token", "", "the server's token (default $JUPYTER_GATEWAY_AUTH_TOKEN)"),
		headers:  fs.String("gateway-headers", "", "more HTTP headers, a JSON object (default $JUPYTER_GATEWAY_HEADERS)"),
		validate: fs.String("gateway-validate-cert", "", "check the server's TLS certificate: true or false (default $JUPYTER_GATEWAY_VALIDATE_CERT, else true)"),
	}
}

// env returns the gateway settings as Jupyter Server's variables: the
// environment's, with the flags over them.
func (g *gatewayFlags) env() map[string]string {
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

// given returns the gateway flags that were set, as Jupyter Server's
// variables (for a kernel process, which inherits the rest).
func (g *gatewayFlags) given() []string {
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

// resolve returns the gateway to use, or nil when the backing kernel runs
// on this machine.
func (g *gatewayFlags) resolve() (*backing.Gateway, error) {
	env := g.env()
	gw, ok, err := backing.GatewayFromEnv(func(k string) string { return env[k] })
	if err != nil || !ok {
		return nil, err
	}
	return &gw, nil
}
