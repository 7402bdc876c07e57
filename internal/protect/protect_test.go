package protect

import "testing"

func TestPath(t *testing.T) {
	tests := []struct {
		path      string
		protected bool
	}{
		// .env and .env.*
		{".env", true}, {".env.local", true}, {".env.example", true}, {"app/.env", true}, {".ENV", true},
		{"env.py", false}, {".envrc", false}, {"environment.yml", false}, {"dotenv.md", false},
		// *secret* — a substring match, deliberately: secretary.md is protected.
		{"secret.txt", true}, {"secrets/config.yaml", true}, {"client_secret.json", true},
		{"secretary.md", true}, {"SECRET_KEY.txt", true}, {"notes/secrets", true},
		{"secure.txt", false}, {"sec.ret", false},
		// *credential*
		{"credentials.json", true}, {".aws/credentials", true}, {"my_credential.txt", true},
		{"creds.md", false},
		// *password*
		{"passwords.txt", true}, {"db_password", true}, {"Password.md", true},
		{"passwd", false}, {"pass.py", false},
		// private keys
		{"id_rsa", true}, {".ssh/id_ed25519", true}, {"id_ecdsa", true}, {"id_dsa", true}, {"id_ed25519_sk", true},
		{"server.pem", true}, {"tls/server.key", true}, {"cert.p12", true}, {"store.pfx", true}, {"KEY.PEM", true},
		{"id_rsa.pub", false}, {"keys.py", false}, {"monkey.py", false}, {"key.txt", false}, {"pem.md", false},
		// files of tokens
		{".mcp.json", true}, {"sub/.netrc", true}, {".pgpass", true}, {".pypirc", true}, {".npmrc", true},
		{"mcp.json", false}, {".mcp.json.md", false}, {"netrc.py", false},
		// .git internals
		{".git", true}, {".git/config", true}, {".git/hooks/pre-commit", true}, {"sub/.git/HEAD", true},
		{".gitignore", false}, {".github/workflows/ci.yml", false}, {".gitattributes", false}, {"git/x", false},
		// ordinary
		{".", false}, {"notebooks/analysis.ipynb", false}, {"src/main.py", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			why := Path(tt.path)
			if (why != "") != tt.protected {
				t.Errorf("Path(%q) = %q, want protected %v", tt.path, why, tt.protected)
			}
		})
	}
}

func TestContent(t *testing.T) {
	tests := []struct {
		name, head string
		secret     bool
	}{
		{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n", true},
		{"rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", true},
		{"pkcs8", "-----BEGIN PRIVATE KEY-----\nMIIE\n", true},
		{"encrypted", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIE\n", true},
		{"after a comment", "# deploy key\n-----BEGIN EC PRIVATE KEY-----\n", true},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n", false},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n", false},
		{"prose", "how to make a PRIVATE KEY----- banner", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if why := Content([]byte(tt.head)); (why != "") != tt.secret {
				t.Errorf("Content(%q) = %q, want secret %v", tt.head, why, tt.secret)
			}
		})
	}
}
