package eglaunch

import (
	"bytes"
	"crypto/aes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// payloadVersion is the launcher payload version EG's ResponseManager
// decodes (LAUNCHER_VERSION in launch_ipykernel.py).
const payloadVersion = 1

// payload is what goes to the response address, JSON then base64.
type payload struct {
	Version  int    `json:"version"`
	Key      string `json:"key"`       // base64 of the AES key, RSA-encrypted
	ConnInfo string `json:"conn_info"` // base64 of the connection info, AES-encrypted
}

// parsePublicKey reads EG's public key: base64 of a DER
// SubjectPublicKeyInfo (a PEM body without its header, footer and line
// breaks, as EG substitutes {public_key}), or a whole PEM block. PKCS #1
// RSA public keys are accepted too, as pycryptodome's importKey does.
func parsePublicKey(s string) (*rsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("eglaunch: no public key (--public-key or PUBLIC_KEY)")
	}
	var der []byte
	if strings.HasPrefix(s, "-----BEGIN") {
		block, _ := pem.Decode([]byte(s))
		if block == nil {
			return nil, errors.New("eglaunch: bad public key: not a PEM block")
		}
		der = block.Bytes
	} else {
		var err error
		if der, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), "")); err != nil {
			return nil, fmt.Errorf("eglaunch: bad public key: not base64: %w", err)
		}
	}
	var pub *rsa.PublicKey
	if k, err := x509.ParsePKIXPublicKey(der); err == nil {
		rk, ok := k.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("eglaunch: bad public key: a %T, want RSA", k)
		}
		pub = rk
	} else if rk, err2 := x509.ParsePKCS1PublicKey(der); err2 == nil {
		pub = rk
	} else {
		// The ASN.1 parser's error says nothing a user can act on.
		return nil, fmt.Errorf("eglaunch: bad public key: %d bytes that are not a DER-encoded RSA public key", len(der))
	}
	if bits := pub.N.BitLen(); bits < 1024 {
		return nil, fmt.Errorf("eglaunch: bad public key: %d-bit RSA, want at least 1024 bits", bits)
	}
	return pub, nil
}

// seal encrypts the connection info as EG's launchers do: a random 16-byte
// AES key encrypts it (ECB, PKCS #7 padding) and is itself encrypted with
// the public key (RSA PKCS #1 v1.5); both go base64 into the versioned
// JSON payload, which is sent base64.
//
// ECB and PKCS #1 v1.5 encryption are weak choices; they are EG's, and its
// ResponseManager decrypts nothing else. What they protect is short-lived
// (the kernel's ports and signing key, sent once to EG).
func seal(connInfo []byte, pub *rsa.PublicKey) ([]byte, error) {
	key := make([]byte, 16)
	rand.Read(key) // never fails (crypto/rand since Go 1.24)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("eglaunch: aes: %w", err)
	}
	n := aes.BlockSize - len(connInfo)%aes.BlockSize
	data := append(bytes.Clone(connInfo), bytes.Repeat([]byte{byte(n)}, n)...)
	for i := 0; i < len(data); i += aes.BlockSize {
		block.Encrypt(data[i:i+aes.BlockSize], data[i:i+aes.BlockSize])
	}
	//lint:ignore SA1019 EG decrypts the key with PKCS1_v1_5 and nothing else.
	encKey, err := rsa.EncryptPKCS1v15(rand.Reader, pub, key)
	if err != nil {
		return nil, fmt.Errorf("eglaunch: encrypt the AES key with the public key: %w", err)
	}
	b, err := json.Marshal(payload{
		Version:  payloadVersion,
		Key:      base64.StdEncoding.EncodeToString(encKey),
		ConnInfo: base64.StdEncoding.EncodeToString(data),
	})
	if err != nil {
		return nil, fmt.Errorf("eglaunch: encode payload: %w", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(b)), nil
}
