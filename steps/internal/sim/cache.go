package sim

import "container/list"

// hashBlocks returns one chained hash per full block of toks, as vLLM does: block i's hash
// covers its parent's hash and its own tokens, so equal hashes mean equal whole prefixes.
// A trailing partial block is not hashed and never cached.
func hashBlocks(toks []string, blockSize int) []uint64 {
	n := len(toks) / blockSize
	hashes := make([]uint64, n)
	const offset64, prime64 = 14695981039346656037, 1099511628211
	parent := uint64(offset64)
	for b := 0; b < n; b++ {
		h := uint64(offset64)
		for s := 0; s < 64; s += 8 {
			h = (h ^ uint64(byte(parent>>s))) * prime64
		}
		for _, t := range toks[b*blockSize : (b+1)*blockSize] {
			for i := 0; i < len(t); i++ {
				h = (h ^ uint64(t[i])) * prime64
			}
			h = (h ^ 0xff) * prime64 // separator: "ab c" and "a bc" must differ
		}
		hashes[b] = h
		parent = h
	}
	return hashes
}

// prefixCache is an LRU of block hashes with a capacity in tokens. It is not safe for
// concurrent use; the engine's mutex guards it.
type prefixCache struct {
	blockSize int
	capBlocks int
	lru       list.List // of uint64 hashes, front = most recently used
	index     map[uint64]*list.Element
	evictions int64
}

func newPrefixCache(capacityTokens, blockSize int) *prefixCache {
	return &prefixCache{
		blockSize: blockSize,
		capBlocks: capacityTokens / blockSize,
		index:     make(map[uint64]*list.Element),
	}
}

// acquire returns how many of the prompt's tokens are reused from the cache and then
// records all of the prompt's full blocks as most recently used.
//
// The reusable length is the longest run of leading blocks present, capped like vLLM so
// that at least the prompt's last token is computed (the model needs its logits), which
// is why a repeated prompt whose length is a multiple of the block size reuses one block
// less than it has.
//
// Blocks are touched last-to-first, so a prompt's first block ends up most recent: under
// pressure the tails of old prompts go first and shared prefixes survive, which is the
// order vLLM's free-block queue evicts in.
func (c *prefixCache) acquire(hashes []uint64, promptTokens int) (cachedTokens int) {
	if c.capBlocks == 0 {
		return 0
	}
	maxHit := 0
	if promptTokens > 0 {
		maxHit = (promptTokens - 1) / c.blockSize
	}
	hit := 0
	for hit < len(hashes) && hit < maxHit {
		if _, ok := c.index[hashes[hit]]; !ok {
			break
		}
		hit++
	}
	for i := len(hashes) - 1; i >= 0; i-- {
		if el, ok := c.index[hashes[i]]; ok {
			c.lru.MoveToFront(el)
			continue
		}
		c.index[hashes[i]] = c.lru.PushFront(hashes[i])
	}
	for c.lru.Len() > c.capBlocks {
		el := c.lru.Back()
		delete(c.index, el.Value.(uint64))
		c.lru.Remove(el)
		c.evictions++
	}
	return hit * c.blockSize
}

// usedTokens is the number of tokens the cache currently holds.
func (c *prefixCache) usedTokens() int { return c.lru.Len() * c.blockSize }
