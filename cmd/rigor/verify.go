package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rigor-bench/rigor/engine"
	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
)

func init() { extraCommands = append(extraCommands, newSignCmd) }

// verifyArgs are verify's flags.
type verifyArgs struct {
	state  string
	asJSON bool
	opts   engine.VerifyOptions
}

func newVerifyCmd(g *globals) *cobra.Command {
	var a verifyArgs
	cmd := &cobra.Command{
		Use:   "verify --state DIR [--head SEQ:SHA256] [--allowed-signers FILE] [--json]",
		Short: "Check every byte of a state directory against its journal; exit 1 on any problem",
		Long: `verify re-hashes every file the journal records (plan/, amendments/, attempts/),
walks the journal's hash chain, rebuilds manifest.json from the journal and names
every difference, checks signed heads under signatures/, and reports any file or
directory no record accounts for. report/ is derived output and is only listed.

A recomputed hash chain passes on its own; --head (a head printed earlier by
plan apply, status or verify, as SEQ:SHA256 or the SHA256 alone) and
--allowed-signers (signatures made with rigor sign) anchor it. Exit status: 0 verified, 1 any problem, 2 bad arguments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.state == "" {
				return &exitError{code: 2, msg: "--state is required"}
			}
			rep, err := engine.VerifyState(a.state, a.opts)
			switch {
			case errors.Is(err, engine.ErrVerifyUsage):
				return &exitError{code: 2, msg: err.Error()}
			case err != nil:
				return &exitError{code: 1, msg: err.Error()}
			}
			if a.asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				renderVerify(g.stdout, a.state, rep)
			}
			if len(rep.Problems) > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%d problem(s) in %s", len(rep.Problems), a.state)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&a.state, "state", "", "state directory")
	cmd.Flags().StringVar(&a.opts.Head, "head", "", "a journal head printed earlier (SEQ:SHA256, or the SHA256 alone) that must still be in the chain")
	cmd.Flags().StringVar(&a.opts.AllowedSigners, "allowed-signers", "", "OpenSSH allowed_signers file: every signature must be by a key it lists, and one must exist")
	cmd.Flags().BoolVar(&a.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// renderVerify is verify's human view: problems first, then what was covered.
func renderVerify(w io.Writer, state string, rep *engine.VerifyReport) {
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "%s: %s\n", p.Path, p.Problem)
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintf(w, "verified: %s — journal chain intact (%d records), every file matches the journal, nothing unaccounted for\n", state, rep.Records)
		fmt.Fprintf(w, "checked: %d file(s) against the sha256 the journal records; manifest.json (%d entries) is the index the journal implies\n", rep.Files, rep.ManifestEntries)
	}
	fmt.Fprintf(w, "journal head %s\n", rep.Head)
	if rep.HeadFound != nil {
		fmt.Fprintf(w, "head %s (--head) is record %d of %d: no record up to it was cut or rewritten\n", rep.HeadFound, rep.HeadFound.Seq, rep.Records)
	}
	for _, s := range rep.Signatures {
		who := "a key not checked against allowed signers"
		if s.Principals != "" {
			who = s.Principals
		}
		fmt.Fprintf(w, "signature %s: head %s signed by %s (%s)\n", s.Path, s.Head, who, s.Key)
	}
	if len(rep.Derived) > 0 {
		fmt.Fprintf(w, "derived, not evidence: %d file(s) under %s/ written by `rigor report` from the evidence; not verified (regenerate them with `rigor report`)\n", len(rep.Derived), engine.ReportDir)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func newSignCmd(g *globals) *cobra.Command {
	var state, key string
	cmd := &cobra.Command{
		Use:   "sign --state DIR --key PATH",
		Short: "Verify a state directory, then sign its journal head with an SSH key (ssh-keygen -Y sign format)",
		Long: `sign runs verify, and if it finds no problem signs the journal head with the
SSH private key at PATH in the SSHSIG format of ssh-keygen -Y sign, namespace
` + engine.SignatureNamespace + `. It writes signatures/head-SEQ.txt (the head)
and signatures/head-SEQ.txt.sig. Exit status: 0 signed, 1 refused or failed,
2 bad arguments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" || key == "" {
				return &exitError{code: 2, msg: "--state and --key are required"}
			}
			signer, err := loadSigner(key)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			s, err := engine.SignHead(state, signer)
			var nv *engine.NotVerifiedError
			if errors.As(err, &nv) {
				for _, p := range nv.Problems {
					fmt.Fprintf(g.stdout, "%s: %s\n", p.Path, p.Problem)
				}
			}
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			fmt.Fprintf(g.stdout, "signed journal head %s with %s\n", s.Head, s.Key)
			fmt.Fprintf(g.stdout, "wrote %s and %s\n", s.Message, s.Signature)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.Flags().StringVar(&key, "key", "", "SSH private key file (OpenSSH or PEM; Ed25519, ECDSA or RSA; not passphrase-protected)")
	return cmd
}

// loadSigner reads an unencrypted SSH private key.
func loadSigner(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	var pm *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &pm):
		return nil, fmt.Errorf("key %s is protected by a passphrase, and rigor sign does not read passphrases; write the head to signatures/head-SEQ.txt and sign it with `ssh-keygen -Y sign -n %s -f %s` instead (rigor verify accepts that signature)", path, engine.SignatureNamespace, path)
	case err != nil:
		return nil, fmt.Errorf("key %s is not an SSH private key: %v", path, err)
	}
	return signer, nil
}
