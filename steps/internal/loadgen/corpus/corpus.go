package corpus

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

// Corpus kinds.
const (
	KindSummary      = "synthetic-summary"
	KindRepeatedCode = "synthetic-repeated-code"
)

// Prefix modes.
const (
	PrefixUnique   = "unique"
	PrefixRepeated = "repeated"
)

// SizingRatio is actual/nominal prompt tokens (seed 001/002: 10240 -> ~7.7K).
const SizingRatio = 0.75

// MinNominalContext is the smallest nominal context that leaves room for the fixed
// instruction text plus a body.
const MinNominalContext = 128

// generatorVersion enters every hash. Bump it whenever the generated text changes
// for the same Spec, so a frozen corpus hash cannot silently match new prompts.
const generatorVersion = "rigor-corpus/1"

// ErrUnknownKind and the other sentinels are wrapped with detail.
var (
	ErrUnknownKind   = errors.New("unknown corpus kind")
	ErrUnknownPrefix = errors.New("unknown prefixes mode")
	ErrTooSmall      = errors.New("nominal context too small")
)

// Kinds returns the valid corpus kinds, sorted.
func Kinds() []string { return []string{KindRepeatedCode, KindSummary} }

// Spec is the frozen corpus setting of a workload.
type Spec struct {
	Kind           string `json:"kind"`
	Seed           int64  `json:"seed"`
	NominalContext int    `json:"nominal_context"`
	Prefixes       string `json:"prefixes"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Prompt is one request's input in both API shapes.
type Prompt struct {
	// Messages is the /v1/chat/completions input: a system and a user message.
	Messages []Message
	// Text is the /v1/completions input: the same contents joined by a blank line,
	// so it has the same token count.
	Text string
	// Tokens is the generator's own count (tokens.Count summed over Messages).
	Tokens int
}

// Validate reports the first problem with s.
func (s Spec) Validate() error {
	switch s.Kind {
	case KindSummary, KindRepeatedCode:
	default:
		return fmt.Errorf("%w %q: valid kinds are %s", ErrUnknownKind, s.Kind, strings.Join(Kinds(), ", "))
	}
	switch s.Prefixes {
	case PrefixUnique, PrefixRepeated:
	default:
		return fmt.Errorf("%w %q: valid modes are %s, %s", ErrUnknownPrefix, s.Prefixes, PrefixRepeated, PrefixUnique)
	}
	if s.NominalContext < MinNominalContext {
		return fmt.Errorf("%w: %d < %d", ErrTooSmall, s.NominalContext, MinNominalContext)
	}
	return nil
}

// TargetTokens is the generated prompt size for a nominal context.
func TargetTokens(nominal int) int { return int(math.Round(SizingRatio * float64(nominal))) }

// Hash is the sha256 (hex) of the canonical settings and the generator version.
// It identifies the corpus without generating it.
func (s Spec) Hash() string {
	b, _ := json.Marshal(struct {
		Generator string  `json:"generator"`
		Ratio     float64 `json:"ratio"`
		Spec
	}{generatorVersion, SizingRatio, s})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ContentHash is the sha256 (hex) over the generated prompts of requests × repetitions
// (index-major, length-prefixed), so a generator change that forgot to bump the
// version is still caught at freeze re-check.
func ContentHash(s Spec, requests, repetitions int) (string, error) {
	h := sha256.New()
	h.Write([]byte(s.Hash()))
	var lenBuf [8]byte
	for i := range requests {
		for r := range repetitions {
			p, err := Generate(s, i, r)
			if err != nil {
				return "", err
			}
			for _, m := range p.Messages {
				for _, part := range []string{m.Role, m.Content} {
					binary.BigEndian.PutUint64(lenBuf[:], uint64(len(part)))
					h.Write(lenBuf[:])
					h.Write([]byte(part))
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Generate returns the prompt of request index at repetition.
func Generate(s Spec, index, repetition int) (Prompt, error) {
	if err := s.Validate(); err != nil {
		return Prompt{}, err
	}
	if index < 0 || repetition < 0 {
		return Prompt{}, fmt.Errorf("corpus: negative index %d or repetition %d", index, repetition)
	}
	if s.Prefixes == PrefixRepeated {
		repetition = 0 // the whole point: repetition r is repetition 0
	}
	// The reference tag opens the prompt so the first token differs between
	// prompts that must differ; prefix caches hash the first block first.
	tag := fmt.Sprintf("[ref %d-%d-%d]", s.Seed, index, repetition)
	rng := rand.New(rand.NewPCG(seedWords(s, index, repetition)))

	var system, head, tail string
	switch s.Kind {
	case KindSummary:
		system = tag + " You are a careful analyst. Read the report in the user message and write a faithful, structured summary."
		head = "Report " + strconv.Itoa(index) + ":\n\n"
		tail = "\n\nSummarize the report above: list the main findings, the open risks and the recommended next steps."
	case KindRepeatedCode:
		system = tag + " You are a senior engineer reviewing a source file for duplicated logic."
		head = "File service_" + strconv.Itoa(index) + ".go:\n\n"
		tail = "\n\nExplain which functions above repeat the same logic and propose one shared helper that replaces them."
	}
	target := TargetTokens(s.NominalContext)
	body := target - tokens.Count(system) - tokens.Count(head) - tokens.Count(tail)
	if body < 16 {
		return Prompt{}, fmt.Errorf("%w: %d leaves %d body tokens", ErrTooSmall, s.NominalContext, body)
	}
	var b strings.Builder
	b.Grow(body * 8)
	b.WriteString(head)
	switch s.Kind {
	case KindSummary:
		writeProse(&b, rng, body)
	case KindRepeatedCode:
		writeCode(&b, rng, body)
	}
	b.WriteString(tail)
	user := b.String()
	msgs := []Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	return Prompt{Messages: msgs, Text: system + "\n\n" + user, Tokens: tokens.Count(system) + tokens.Count(user)}, nil
}

// seedWords derives the PRNG state from everything that must change the content.
func seedWords(s Spec, index, repetition int) (uint64, uint64) {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%d|%d", generatorVersion, s.Kind, s.Seed, index, repetition)))
	return binary.BigEndian.Uint64(sum[0:8]), binary.BigEndian.Uint64(sum[8:16])
}

// writeProse writes exactly n tokens of sentence-shaped text.
func writeProse(b *strings.Builder, rng *rand.Rand, n int) {
	sentenceLeft := 0
	for i := range n {
		if sentenceLeft == 0 {
			sentenceLeft = 6 + rng.IntN(12)
			if i > 0 && rng.IntN(6) == 0 {
				b.WriteString("\n\n")
			} else if i > 0 {
				b.WriteByte(' ')
			}
			w := vocabulary[rng.IntN(len(vocabulary))]
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		} else {
			b.WriteByte(' ')
			if rng.IntN(9) == 0 {
				b.WriteString(strconv.Itoa(rng.IntN(10000)))
			} else {
				b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
			}
		}
		sentenceLeft--
		if sentenceLeft == 0 || i == n-1 {
			b.WriteByte('.')
			sentenceLeft = 0
		}
	}
}

// codeTemplate is one function repeated with different identifiers, the shape of a
// file with copy-pasted logic. %[1]s is a name, %[2]d and %[3]d are constants.
var codeTemplate = strings.Fields(`func handle%[1]s(ctx context.Context, req *Request) (*Response, error) {
 if req == nil || req.Amount < %[2]d {
 return nil, fmt.Errorf("%[1]s: invalid amount")
 }
 total := req.Amount*%[3]d + req.Offset
 if err := store.Save(ctx, "%[1]s", total); err != nil {
 return nil, err
 }
 return &Response{Name: "%[1]s", Total: total}, nil
 }`)

// writeCode writes exactly n tokens of repetitive Go-like code. Each template line is
// one source line; the last partial function is cut at the token budget.
func writeCode(b *strings.Builder, rng *rand.Rand, n int) {
	written := 0
	for written < n {
		base := codeNames[rng.IntN(len(codeNames))]
		name := strings.ToUpper(base[:1]) + base[1:] + strconv.Itoa(rng.IntN(1000))
		lo, mul := 1+rng.IntN(500), 2+rng.IntN(97)
		for j, tok := range codeTemplate {
			if written == n {
				break
			}
			if written > 0 {
				if j > 0 && (tok == "if" || tok == "return" || tok == "total" || tok == "}") {
					b.WriteString("\n\t")
				} else if j == 0 {
					b.WriteString("\n\n")
				} else {
					b.WriteByte(' ')
				}
			}
			if strings.Contains(tok, "%[") {
				tok = fmt.Sprintf(tok, name, lo, mul)
			}
			b.WriteString(tok)
			written++
		}
	}
}

var codeNames = []string{"order", "invoice", "refund", "payment", "ledger", "account", "shipment", "quote", "cart", "coupon", "tax", "audit"}

var vocabulary = strings.Fields(`the system report quarter revenue growth latency throughput cluster region
customer team policy incident review capacity forecast budget risk mitigation vendor
contract renewal migration database service outage recovery backlog roadmap release
quality metric baseline target variance analysis finding evidence estimate decision
owner schedule milestone dependency integration deployment rollback monitoring alert
threshold storage network compute memory utilisation efficiency cost saving increase
decrease stable moderate significant minor major critical across within between during
after before since because although however therefore moreover while each every several
many few most some new existing current previous next planned observed measured reported
expected actual initial final primary secondary internal external manual automated
regional global weekly monthly annual peak average median sustained temporary permanent
improved reduced delayed completed pending approved rejected escalated resolved tracked
documented verified audited scheduled allocated assigned requested delivered operated
maintained supported analysed compared confirmed identified prioritised recommended
engineers operators analysts managers auditors partners suppliers regulators users
servers nodes queues pipelines datasets dashboards tickets contracts invoices shipments`)
