// Package sshsig signs and verifies messages in OpenSSH's SSHSIG format, the one
// `ssh-keygen -Y sign` writes and `ssh-keygen -Y verify` checks (OpenSSH's
// PROTOCOL.sshsig), and reads OpenSSH allowed_signers files.
//
// rigor uses it to sign a journal head so that a journal whose hash chain was
// recomputed after a forgery no longer verifies: the signature names the head the
// signer saw, and only the signer's private key can make another.
//
// Invariants:
//   - A signature is accepted only for the namespace the caller asks for, with a
//     sha256 or sha512 message hash, and for RSA keys only with rsa-sha2-256 or
//     rsa-sha2-512 (never SHA-1 "ssh-rsa"), as ssh-keygen does.
//   - Sign writes what ssh-keygen writes: sha512 message hash, rsa-sha2-512 for
//     RSA keys, armored base64 in 70-column lines. Ed25519 signatures are
//     deterministic, so rigor's and ssh-keygen's are byte for byte the same.
//   - An allowed_signers option this package does not implement (cert-authority,
//     valid-after, valid-before) is refused with the line it is on, never ignored.
//
// Out of scope: certificates, security-key (sk-*) signing, ssh-agent, and
// principal lookup by wildcard identity (rigor reports the principals of the key
// that signed; it is not told an identity to check).
package sshsig
