// Package dataset reads the prompt sources of `rigor bench` beside the block step's
// synthetic corpus: a prompts file (JSONL, one {"prompt": ...} or {"messages": [...]}
// per line), a ShareGPT-format JSON file, and random prompts of given input and output
// lengths. Each is a loadgen.Source: request i's input is a pure function of i, so a
// rerun sends the same requests and loadgen.Digest identifies them.
//
// Invariants:
//   - A file is read once, whole, when the source is built; its sha256 is recorded
//     (SourceInfo.FileSHA256), so a result names the exact file it sent.
//   - Bad input is refused with the file, the line (JSONL) or entry (ShareGPT) and what
//     is wrong, never skipped silently. The one exception is ShareGPT's own shape:
//     conversations with fewer than two turns are skipped, as vllm bench serve does, and
//     counted (Skipped).
//   - A file with fewer inputs than requests is cycled: request i sends input i mod n.
//     The result records the distinct input count, so repeats are visible.
//   - Lengths are in rigor's one token notion (package tokens: whitespace-separated
//     words). rigor has no model tokenizer: the server's usage.prompt_tokens, with its
//     tokenizer and chat template, is what the figures use, and a workload that needs
//     exact counts asserts them (loadgen.Workload.AssertPromptTokens).
//
// Out of scope: tokenizer-exact lengths, multi-turn conversations (only the first turn
// of a ShareGPT conversation is sent), multimodal content, downloading datasets.
package dataset
