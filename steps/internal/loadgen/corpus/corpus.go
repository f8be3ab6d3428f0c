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
	"regexp"
	"slices"
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
	// PrefixUnique: every request of a corpus opens with its own prefix.
	PrefixUnique = "unique"
	// PrefixRepeated: every request of a corpus opens with one shared prefix.
	PrefixRepeated = "repeated"
)

// Lanes. A pilot block renders its corpus in its own lane, so no measured block ever
// sends a prompt a pilot sent (seed 001: pilots remain separate).
const (
	LaneMain  = "main"
	LanePilot = "pilot"
)

// SizingRatio is actual/nominal prompt tokens (seed 001/002: 10240 -> ~7.7K).
const SizingRatio = 0.75

// RepeatedDistinctShare is the share of a repeated-prefix prompt that is its own: the
// rest, from the first token on, is the prefix every request of the corpus shares.
const RepeatedDistinctShare = 0.125

// MinNominalContext is the smallest nominal context that leaves room for the fixed
// instruction text plus a body.
const MinNominalContext = 128

// minDistinctTokens keeps a repeated-prefix prompt's own part at least one 16-token
// prefix-cache block long, so no request is a cache hit on another's prompt in full.
const minDistinctTokens = 16

// generatorVersion enters every seed and digest. Bump it whenever the generated text
// changes for the same ID, so a pinned corpus digest cannot silently match new prompts.
const generatorVersion = "rigor-corpus/2"

// ErrUnknownKind and the other sentinels are wrapped with detail.
var (
	ErrUnknownKind   = errors.New("unknown corpus kind")
	ErrUnknownPrefix = errors.New("unknown prefixes mode")
	ErrTooSmall      = errors.New("nominal context too small")
	ErrBadID         = errors.New("invalid corpus identity")
)

// Kinds returns the valid corpus kinds, sorted.
func Kinds() []string { return []string{KindRepeatedCode, KindSummary} }

// PrefixModes lists the prefix modes, sorted.
func PrefixModes() []string { return []string{PrefixRepeated, PrefixUnique} }

// Spec is the corpus setting of a workload: what every corpus rendered from it has in
// common.
type Spec struct {
	Kind           string `json:"kind"`
	Seed           int64  `json:"seed"`
	NominalContext int    `json:"nominal_context"`
	Prefixes       string `json:"prefixes"`
	// Fresh makes a cold lane: every repetition renders new prompts (seed 001: "cold
	// means fresh prefix"). Without it every repetition sends the same prompts.
	Fresh bool `json:"fresh_prefixes"`
}

// ID identifies one rendered corpus: a workload's corpus setting for one concurrency
// cell in one lane, and, in a cold lane only, one repetition. Prompt i of an ID is a
// pure function of (ID, i).
type ID struct {
	Spec
	Cell string `json:"cell"` // "c4": the concurrency cell
	Lane string `json:"lane"` // LaneMain or LanePilot
	// Repetition distinguishes the corpora of a cold lane; it is ignored (and
	// normalised to 0) unless Spec.Fresh is set.
	Repetition int `json:"repetition"`
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
	if !slices.Contains(Kinds(), s.Kind) {
		return fmt.Errorf("%w %q: valid kinds are %s", ErrUnknownKind, s.Kind, strings.Join(Kinds(), ", "))
	}
	if !slices.Contains(PrefixModes(), s.Prefixes) {
		return fmt.Errorf("%w %q: valid modes are %s", ErrUnknownPrefix, s.Prefixes, strings.Join(PrefixModes(), ", "))
	}
	if s.NominalContext < MinNominalContext {
		return fmt.Errorf("%w: %d < %d", ErrTooSmall, s.NominalContext, MinNominalContext)
	}
	return nil
}

var cellPattern = regexp.MustCompile(`^c[1-9][0-9]*$`)

// Validate reports the first problem with id.
func (id ID) Validate() error {
	if err := id.Spec.Validate(); err != nil {
		return err
	}
	if !cellPattern.MatchString(id.Cell) {
		return fmt.Errorf("%w: cell %q is not c<concurrency>", ErrBadID, id.Cell)
	}
	if id.Lane != LaneMain && id.Lane != LanePilot {
		return fmt.Errorf("%w: lane %q is not %q or %q", ErrBadID, id.Lane, LaneMain, LanePilot)
	}
	if id.Repetition < 0 {
		return fmt.Errorf("%w: negative repetition %d", ErrBadID, id.Repetition)
	}
	return nil
}

// Cell names the concurrency cell of concurrency c.
func Cell(c int) string { return "c" + strconv.Itoa(c) }

// normalized drops what does not identify the corpus: the repetition outside a cold lane.
func (id ID) normalized() ID {
	if !id.Fresh {
		id.Repetition = 0
	}
	return id
}

// String is the identity as it appears in prompts' reference tags.
func (id ID) String() string {
	id = id.normalized()
	s := fmt.Sprintf("%d-%s-%s", id.Seed, id.Cell, id.Lane)
	if id.Fresh {
		s += "-r" + strconv.Itoa(id.Repetition)
	}
	return s
}

// TargetTokens is the generated prompt size for a nominal context.
func TargetTokens(nominal int) int { return int(math.Round(SizingRatio * float64(nominal))) }

// Digest is the sha256 (hex) of the corpus's first `requests` prompts: the settings and
// the generator version, then every message of every prompt in index order,
// length-prefixed. It changes whenever any prompt a block would send changes.
func Digest(id ID, requests int) (string, error) {
	if requests < 1 {
		return "", fmt.Errorf("%w: %d requests", ErrBadID, requests)
	}
	if err := id.Validate(); err != nil {
		return "", err
	}
	id = id.normalized()
	h := sha256.New()
	head, _ := json.Marshal(struct {
		Generator string  `json:"generator"`
		Ratio     float64 `json:"ratio"`
		Share     float64 `json:"repeated_distinct_share"`
		ID
	}{generatorVersion, SizingRatio, RepeatedDistinctShare, id})
	h.Write(head)
	var lenBuf [8]byte
	for i := range requests {
		p, err := id.Prompt(i)
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
	return hex.EncodeToString(h.Sum(nil)), nil
}

// texts are the fixed instruction strings of a kind.
type texts struct {
	system, head, tail, question string
}

func kindTexts(kind string, index int) texts {
	i := strconv.Itoa(index)
	if kind == KindRepeatedCode {
		return texts{
			system:   "You are a senior engineer reviewing a source file for duplicated logic.",
			head:     "File service.go:\n\n",
			tail:     "\n\nExplain which functions above repeat the same logic and propose one shared helper that replaces them.",
			question: "\n\nReview note " + i + ":",
		}
	}
	return texts{
		system:   "You are a careful analyst. Read the report in the user message and write a faithful, structured summary.",
		head:     "Report:\n\n",
		tail:     "\n\nSummarize the report above: list the main findings, the open risks and the recommended next steps.",
		question: "\n\nReviewer note " + i + ":",
	}
}

// Prompt returns the prompt of request index.
//
// Unique prefixes: the system message opens with a reference tag naming the corpus and
// the index, so a prompt's first token block differs from every other prompt of every
// corpus; the body is drawn from the index's own random stream.
//
// Repeated prefixes: the system message and the document are the same for every index
// (tag without index, body from the corpus's shared stream); the last
// RepeatedDistinctShare of the prompt is a note drawn from the index's own stream, then
// the fixed instruction.
func (id ID) Prompt(index int) (Prompt, error) {
	if err := id.Validate(); err != nil {
		return Prompt{}, err
	}
	if index < 0 {
		return Prompt{}, fmt.Errorf("%w: negative index %d", ErrBadID, index)
	}
	id = id.normalized()
	tx := kindTexts(id.Kind, index)
	target := TargetTokens(id.NominalContext)
	var b strings.Builder
	var system string
	if id.Prefixes == PrefixUnique {
		// The reference tag opens the prompt so the first token differs between
		// prompts that must differ; prefix caches hash the first block first.
		system = fmt.Sprintf("[ref %s %d] %s", id.tag(), index, tx.system)
		body := target - tokens.Count(system) - tokens.Count(tx.head) - tokens.Count(tx.tail)
		if body < 16 {
			return Prompt{}, fmt.Errorf("%w: %d leaves %d body tokens", ErrTooSmall, id.NominalContext, body)
		}
		b.Grow(body * 8)
		b.WriteString(tx.head)
		write(&b, id.Kind, rand.New(rand.NewPCG(id.seedWords(index))), body)
	} else {
		system = fmt.Sprintf("[ref %s] %s", id.tag(), tx.system)
		distinct := max(minDistinctTokens, int(math.Round(RepeatedDistinctShare*float64(target))))
		own := distinct - tokens.Count(tx.question)
		shared := target - tokens.Count(system) - tokens.Count(tx.head) - distinct - tokens.Count(tx.tail)
		if shared < 16 || own < 1 {
			return Prompt{}, fmt.Errorf("%w: %d leaves %d shared body tokens", ErrTooSmall, id.NominalContext, shared)
		}
		b.Grow((shared + distinct) * 8)
		b.WriteString(tx.head)
		write(&b, id.Kind, rand.New(rand.NewPCG(id.seedWords(-1))), shared)
		b.WriteString(tx.question)
		b.WriteByte(' ')
		writeProse(&b, rand.New(rand.NewPCG(id.seedWords(index))), own)
	}
	b.WriteString(tx.tail)
	user := b.String()
	msgs := []Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	return Prompt{Messages: msgs, Text: system + "\n\n" + user, Tokens: tokens.Count(system) + tokens.Count(user)}, nil
}

func write(b *strings.Builder, kind string, rng *rand.Rand, n int) {
	if kind == KindRepeatedCode {
		writeCode(b, rng, n)
		return
	}
	writeProse(b, rng, n)
}

// key is everything that identifies the corpus, canonically encoded.
func (id ID) key() string {
	b, _ := json.Marshal(id.normalized())
	return generatorVersion + "|" + string(b)
}

// tag names the corpus in its prompts: readable settings plus a short digest of the
// whole identity, so corpora that differ only in kind, nominal context or prefix mode
// still open differently.
func (id ID) tag() string {
	sum := sha256.Sum256([]byte(id.key()))
	return id.String() + " " + hex.EncodeToString(sum[:4])
}

// seedWords derives the PRNG state of one random stream of the corpus from everything
// that identifies it; stream -1 is the shared stream of repeated prefixes.
func (id ID) seedWords(stream int) (uint64, uint64) {
	sum := sha256.Sum256([]byte(id.key() + "|" + strconv.Itoa(stream)))
	return binary.BigEndian.Uint64(sum[0:8]), binary.BigEndian.Uint64(sum[8:16])
}

// Prose is exactly n tokens of the corpus's sentence-shaped text, drawn from the PCG
// stream (seed1, seed2): the text of random prompts of a given length.
func Prose(seed1, seed2 uint64, n int) string {
	var b strings.Builder
	b.Grow(n * 8)
	writeProse(&b, rand.New(rand.NewPCG(seed1, seed2)), n)
	return b.String()
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
