package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rigor-bench/rigor/engine/internal/sshsig"
	"golang.org/x/crypto/ssh"
)

// SignatureNamespace is the SSHSIG namespace of journal head signatures: a
// signature made for another purpose (git commits, files) never passes as one.
const SignatureNamespace = "rigor-journal@rigor-bench"

// SignedHead is what SignHead wrote.
type SignedHead struct {
	Head      Head
	Message   string // signatures/head-<seq>.txt: the head as "SEQ:SHA256\n"
	Signature string // signatures/head-<seq>.txt.sig: the armored SSHSIG over it
	Key       string // the key's type and SHA256 fingerprint
}

// NotVerifiedError is SignHead's refusal to sign a state directory that does not
// verify: a signature would vouch for the problems.
type NotVerifiedError struct {
	Problems []Problem
}

func (e *NotVerifiedError) Error() string {
	return fmt.Sprintf("refusing to sign: the state directory has %d problem(s); `rigor verify` lists them", len(e.Problems))
}

// ErrAlreadySigned is returned when the current head already has a signature.
var ErrAlreadySigned = errors.New("head already signed")

// SignHead verifies the state directory, then signs its journal head with signer
// in the SSHSIG format (what `ssh-keygen -Y sign -n rigor-journal@rigor-bench`
// writes) and stores signatures/head-<seq>.txt and head-<seq>.txt.sig. The same
// two files made by ssh-keygen are accepted by Verify alike.
func SignHead(stateDir string, signer ssh.Signer) (*SignedHead, error) {
	rep, err := VerifyState(stateDir, VerifyOptions{})
	if err != nil {
		return nil, err
	}
	if len(rep.Problems) > 0 {
		return nil, &NotVerifiedError{Problems: rep.Problems}
	}
	h := rep.Head
	msgPath := fmt.Sprintf("%s/head-%d.txt", SignaturesDir, h.Seq)
	out := &SignedHead{Head: h, Message: msgPath, Signature: msgPath + ".sig",
		Key: signer.PublicKey().Type() + " " + ssh.FingerprintSHA256(signer.PublicKey())}
	if _, err := os.Stat(statePath(stateDir, msgPath)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s exists; a head is signed once (sign again after the journal grows)", ErrAlreadySigned, msgPath)
	}
	msg := []byte(h.String() + "\n")
	sig, err := sshsig.Sign(signer, msg, SignatureNamespace)
	if err != nil {
		return nil, err
	}
	if err := writeFileOnce(statePath(stateDir, msgPath), msg); err != nil {
		return nil, fmt.Errorf("write %s: %w", msgPath, err)
	}
	if err := writeFileOnce(statePath(stateDir, out.Signature), sig); err != nil {
		// A head without its signature would be a problem verify reports and sign
		// then refuses to fix: nothing was signed, so nothing is left.
		os.Remove(statePath(stateDir, msgPath))
		return nil, fmt.Errorf("write %s: %w (nothing was signed)", out.Signature, err)
	}
	return out, nil
}
