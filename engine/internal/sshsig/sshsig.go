package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

const (
	magic       = "SSHSIG"
	sigVersion  = 1
	armorBegin  = "-----BEGIN SSH SIGNATURE-----"
	armorEnd    = "-----END SSH SIGNATURE-----"
	armorColumn = 70 // ssh-keygen's line width
	// HashSHA512 is the message hash Sign uses, ssh-keygen's default.
	HashSHA512 = "sha512"
	// HashSHA256 is the other message hash the format allows.
	HashSHA256 = "sha256"
)

// ErrInvalid is wrapped by every reason a signature is rejected.
var ErrInvalid = errors.New("invalid SSH signature")

// blob is the signature envelope after the 6-byte magic (PROTOCOL.sshsig §3).
type blob struct {
	Version       uint32
	PublicKey     []byte
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Signature     []byte
}

// signedData is what the key actually signs (PROTOCOL.sshsig §3): the namespace
// binds a signature to one use, and only the message's hash is signed.
type signedData struct {
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Hash          []byte
}

// Signature is a verified signature: the key that made it and how.
type Signature struct {
	PublicKey     ssh.PublicKey
	Namespace     string
	HashAlgorithm string
	Format        string // the signature algorithm, e.g. ssh-ed25519, rsa-sha2-512
}

// Fingerprint is the key's SHA256 fingerprint as ssh-keygen -l prints it.
func (s *Signature) Fingerprint() string { return ssh.FingerprintSHA256(s.PublicKey) }

func messageHash(alg string, message []byte) ([]byte, error) {
	var h hash.Hash
	switch alg {
	case HashSHA512:
		h = sha512.New()
	case HashSHA256:
		h = sha256.New()
	default:
		return nil, fmt.Errorf("%w: hash algorithm %q (want sha256 or sha512)", ErrInvalid, alg)
	}
	h.Write(message)
	return h.Sum(nil), nil
}

func toSign(namespace, alg string, sum []byte) []byte {
	return append([]byte(magic), ssh.Marshal(signedData{Namespace: namespace, HashAlgorithm: alg, Hash: sum})...)
}

// Sign signs message for namespace and returns the armored signature, as
// `ssh-keygen -Y sign -n NAMESPACE` writes it.
func Sign(signer ssh.Signer, message []byte, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	sum, _ := messageHash(HashSHA512, message)
	data := toSign(namespace, HashSHA512, sum)
	var sig *ssh.Signature
	var err error
	if signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("sshsig: this RSA signer cannot sign with rsa-sha2-512")
		}
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: sign: %w", err)
	}
	b := append([]byte(magic), ssh.Marshal(blob{
		Version: sigVersion, PublicKey: signer.PublicKey().Marshal(), Namespace: namespace,
		HashAlgorithm: HashSHA512, Signature: ssh.Marshal(sig),
	})...)
	return armor(b), nil
}

func armor(b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	var out bytes.Buffer
	out.WriteString(armorBegin + "\n")
	for len(enc) > armorColumn {
		out.WriteString(enc[:armorColumn] + "\n")
		enc = enc[armorColumn:]
	}
	out.WriteString(enc + "\n" + armorEnd + "\n")
	return out.Bytes()
}

func unarmor(armored []byte) ([]byte, error) {
	s := strings.TrimSpace(string(armored))
	if !strings.HasPrefix(s, armorBegin) || !strings.HasSuffix(s, armorEnd) {
		return nil, fmt.Errorf("%w: not armored with %q … %q", ErrInvalid, armorBegin, armorEnd)
	}
	body := strings.Join(strings.Fields(s[len(armorBegin):len(s)-len(armorEnd)]), "")
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrInvalid, err)
	}
	return b, nil
}

// Verify checks an armored signature over message for namespace with the public
// key the signature carries, and returns that key. Whether the key is one the
// caller trusts is a separate question: see AllowedSigners.
func Verify(armored, message []byte, namespace string) (*Signature, error) {
	raw, err := unarmor(armored)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(raw, []byte(magic)) {
		return nil, fmt.Errorf("%w: no %s preamble", ErrInvalid, magic)
	}
	var b blob
	if err := ssh.Unmarshal(raw[len(magic):], &b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if b.Version != sigVersion {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrInvalid, b.Version, sigVersion)
	}
	if b.Namespace != namespace {
		return nil, fmt.Errorf("%w: made for namespace %q, not %q", ErrInvalid, b.Namespace, namespace)
	}
	pub, err := ssh.ParsePublicKey(b.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrInvalid, err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(b.Signature, &sig); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrInvalid, err)
	}
	if pub.Type() == ssh.KeyAlgoRSA && sig.Format != ssh.KeyAlgoRSASHA256 && sig.Format != ssh.KeyAlgoRSASHA512 {
		return nil, fmt.Errorf("%w: RSA signature algorithm %q (want rsa-sha2-256 or rsa-sha2-512)", ErrInvalid, sig.Format)
	}
	sum, err := messageHash(b.HashAlgorithm, message)
	if err != nil {
		return nil, err
	}
	if err := pub.Verify(toSign(b.Namespace, b.HashAlgorithm, sum), &sig); err != nil {
		return nil, fmt.Errorf("%w: the signature does not match the message and key (%v)", ErrInvalid, err)
	}
	return &Signature{PublicKey: pub, Namespace: b.Namespace, HashAlgorithm: b.HashAlgorithm, Format: sig.Format}, nil
}
