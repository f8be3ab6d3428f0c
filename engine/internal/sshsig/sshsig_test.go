package sshsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
)

const ns = "rigor-journal@rigor-bench"

const golden = "testdata/ssh-keygen-9.2"

// goldenSigner is the test-only key testdata/ssh-keygen-9.2/ed25519.sig was made with.
func goldenSigner(t *testing.T) (ed25519.PrivateKey, ssh.Signer) {
	t.Helper()
	seed := sha256.Sum256([]byte("rigor sshsig golden vector"))
	key := ed25519.NewKeyFromSeed(seed[:])
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, s
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pub(t *testing.T, authorized []byte) ssh.PublicKey {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey(authorized)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSignMatchesSSHKeygen: Ed25519 signatures are deterministic, so rigor's
// signature over the same message with the same key must be ssh-keygen's, byte
// for byte; this holds on machines without ssh-keygen.
func TestSignMatchesSSHKeygen(t *testing.T) {
	_, signer := goldenSigner(t)
	if got, want := ssh.MarshalAuthorizedKey(signer.PublicKey()), read(t, "ed25519.pub"); !bytes.Equal(bytes.Fields(got)[1], bytes.Fields(want)[1]) {
		t.Fatalf("the seed no longer gives the golden key:\n%s\n%s", got, want)
	}
	got, err := Sign(signer, read(t, "head.txt"), ns)
	if err != nil {
		t.Fatal(err)
	}
	if want := read(t, "ed25519.sig"); !bytes.Equal(got, want) {
		t.Fatalf("rigor's signature differs from ssh-keygen's:\n%s\nwant\n%s", got, want)
	}
}

// TestVerifySSHKeygenSignatures checks signatures ssh-keygen made with each key type.
func TestVerifySSHKeygenSignatures(t *testing.T) {
	msg := read(t, "head.txt")
	for name, format := range map[string]string{"ed25519": "ssh-ed25519", "rsa": "rsa-sha2-512", "ecdsa": "ecdsa-sha2-nistp256"} {
		t.Run(name, func(t *testing.T) {
			sig, err := Verify(read(t, name+".sig"), msg, ns)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sig.PublicKey.Marshal(), pub(t, read(t, name+".pub")).Marshal()) {
				t.Fatal("Verify returned a key other than the signer's")
			}
			if sig.Format != format || sig.HashAlgorithm != HashSHA512 {
				t.Fatalf("format %s hash %s, want %s sha512", sig.Format, sig.HashAlgorithm, format)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	msg := read(t, "head.txt")
	good := read(t, "ed25519.sig")
	raw, err := unarmor(good)
	if err != nil {
		t.Fatal(err)
	}
	rearmor := func(f func(b []byte) []byte) []byte { return armor(f(append([]byte(nil), raw...))) }
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		sig, msg []byte
		ns, want string
	}{
		"other namespace":    {sig: good, msg: msg, ns: "file", want: `namespace "rigor-journal@rigor-bench", not "file"`},
		"changed message":    {sig: good, msg: bytes.Replace(msg, []byte("68:"), []byte("69:"), 1), ns: ns, want: "does not match the message"},
		"flipped signature":  {sig: rearmor(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), msg: msg, ns: ns, want: "does not match the message"},
		"wrong magic":        {sig: rearmor(func(b []byte) []byte { b[0] = 'X'; return b }), msg: msg, ns: ns, want: "preamble"},
		"version 2":          {sig: rearmor(func(b []byte) []byte { b[9] = 2; return b }), msg: msg, ns: ns, want: "version 2"},
		"not armored":        {sig: []byte(base64.StdEncoding.EncodeToString(raw)), msg: msg, ns: ns, want: "not armored"},
		"trailing bytes":     {sig: rearmor(func(b []byte) []byte { return append(b, 0) }), msg: msg, ns: ns, want: "invalid SSH signature"},
		"sha1 rsa signature": {sig: sha1RSA(t, rsaKey, msg), msg: msg, ns: ns, want: `RSA signature algorithm "ssh-rsa"`},
		"unknown hash (md5)": {sig: rearmor(func(b []byte) []byte {
			return bytes.Replace(b, []byte("\x00\x00\x00\x06sha512"), []byte("\x00\x00\x00\x06md5xxx"), 1)
		}), msg: msg, ns: ns, want: `hash algorithm "md5xxx"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(tc.sig, tc.msg, tc.ns)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// sha1RSA builds an otherwise valid SSHSIG whose RSA signature uses SHA-1, which
// ssh-keygen refuses and so must rigor.
func sha1RSA(t *testing.T, key *rsa.PrivateKey, msg []byte) []byte {
	t.Helper()
	s, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := messageHash(HashSHA512, msg)
	sig, err := s.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, toSign(ns, HashSHA512, sum), ssh.KeyAlgoRSA)
	if err != nil {
		t.Fatal(err)
	}
	return armor(append([]byte(magic), ssh.Marshal(blob{Version: 1, PublicKey: s.PublicKey().Marshal(), Namespace: ns, HashAlgorithm: HashSHA512, Signature: ssh.Marshal(sig)})...))
}

// TestSSHKeygenInterop signs with rigor and verifies with ssh-keygen, and the other
// way round, for fresh Ed25519, ECDSA and RSA keys. The golden tests above keep
// the same promise where ssh-keygen is not installed.
func TestSSHKeygenInterop(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen not installed; TestSignMatchesSSHKeygen and TestVerifySSHKeygenSignatures cross-check against its recorded output")
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for name, key := range map[string]any{"ed25519": edKey, "ecdsa": ecKey, "rsa": rsaKey} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			signer, err := ssh.NewSignerFromKey(key)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := ssh.MarshalPrivateKey(key, "interop")
			if err != nil {
				t.Fatal(err)
			}
			keyPath := filepath.Join(dir, "key")
			must(t, os.WriteFile(keyPath, pem.EncodeToMemory(blk), 0o600))
			allowed := filepath.Join(dir, "allowed_signers")
			must(t, os.WriteFile(allowed, append([]byte(`ci@rigor namespaces="`+ns+`" `), ssh.MarshalAuthorizedKey(signer.PublicKey())...), 0o644))
			msg := []byte("12:" + strings.Repeat("ab", 32) + "\n")
			msgPath := filepath.Join(dir, "head-12.txt")
			must(t, os.WriteFile(msgPath, msg, 0o644))

			// rigor signs, ssh-keygen verifies.
			sig, err := Sign(signer, msg, ns)
			if err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(msgPath+".sig", sig, 0o644))
			cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "ci@rigor", "-n", ns, "-s", msgPath+".sig")
			cmd.Stdin = bytes.NewReader(msg)
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `Good "`+ns+`" signature for ci@rigor`) {
				t.Fatalf("ssh-keygen -Y verify rejected rigor's signature: %v\n%s", err, out)
			}
			// ...and rejects it for another message, so the check above means something.
			cmd = exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "ci@rigor", "-n", ns, "-s", msgPath+".sig")
			cmd.Stdin = strings.NewReader("13:" + strings.Repeat("ab", 32) + "\n")
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("ssh-keygen accepted rigor's signature for another message:\n%s", out)
			}

			// ssh-keygen signs, rigor verifies.
			must(t, os.Remove(msgPath+".sig"))
			if out, err := exec.Command(keygen, "-Y", "sign", "-n", ns, "-f", keyPath, msgPath).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			theirs, err := os.ReadFile(msgPath + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Verify(theirs, msg, ns)
			if err != nil {
				t.Fatalf("rigor rejected ssh-keygen's signature: %v", err)
			}
			list, err := ParseAllowedSigners(mustRead(t, allowed))
			if err != nil {
				t.Fatal(err)
			}
			if s := list.Find(got.PublicKey, ns); s == nil || s.Principals != "ci@rigor" {
				t.Fatalf("the allowed_signers entry was not found for ssh-keygen's signature: %+v", s)
			}
		})
	}
}

func TestParseAllowedSigners(t *testing.T) {
	_, signer := goldenSigner(t)
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	other := strings.TrimSpace(string(read(t, "rsa.pub")))
	type found struct {
		Principals string
		Line       int
	}
	cases := map[string]struct {
		file    string
		ns      string
		want    *found
		wantErr string
	}{
		"plain entry":             {file: "alice@example.com " + key, ns: ns, want: &found{"alice@example.com", 1}},
		"bare key, no principals": {file: "# signers\n\n" + other + "\nbob " + key + " laptop\n", ns: ns, wantErr: "line 3: no public key"},
		"second line":             {file: "# signers\n\ncarol " + other + "\nbob " + key + " laptop\n", ns: ns, want: &found{"bob", 4}},
		"namespace allowed":       {file: `alice namespaces="file,rigor-journal@*" ` + key, ns: ns, want: &found{"alice", 1}},
		"namespace not allowed":   {file: `alice namespaces="file,git" ` + key, ns: ns},
		"namespace vetoed":        {file: `alice namespaces="*,!rigor-journal@rigor-bench" ` + key, ns: ns},
		"quoted principals":       {file: `"alice,bob smith" ` + key, ns: ns, want: &found{"alice,bob smith", 1}},
		"other key only":          {file: "carol " + other, ns: ns},
		"cert-authority refused":  {file: "*@example.com cert-authority " + key, ns: ns, wantErr: "line 1: option cert-authority is not supported"},
		"valid-before refused":    {file: `alice valid-before="20300101" ` + key, ns: ns, wantErr: "line 1: option valid-before is not supported"},
		"valid-after refused":     {file: "# a comment\n" + `alice valid-after="20200101" ` + key, ns: ns, wantErr: "line 2: option valid-after is not supported"},
		"unknown option":          {file: `alice no-touch-required ` + key, ns: ns, wantErr: `line 1: unknown option "no-touch-required"`},
		"key without principals":  {file: key, ns: ns, wantErr: "line 1: no public key"},
		"empty file":              {file: "# nobody\n", ns: ns, wantErr: "no signer listed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			list, err := ParseAllowedSigners([]byte(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got *found
			if s := list.Find(signer.PublicKey(), tc.ns); s != nil {
				got = &found{s.Principals, s.Line}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("signer found (-want +got):\n%s", diff)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
