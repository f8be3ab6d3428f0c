// Package tokens is the one token notion shared by the simulator server and the
// corpus generator: a token is a maximal run of non-space bytes. Keeping it in one
// place means the simulator's usage.prompt_tokens and the corpus generator's sizing
// can never disagree about what a token is.
package tokens
