package plans

import (
	"fmt"
	"strconv"
	"strings"
)

// InstanceAddr names one expanded step instance: TYPE.NAME or TYPE.NAME["key"].
func InstanceAddr(stepType, name, key string, keyed bool) string {
	if !keyed {
		return stepType + "." + name
	}
	return fmt.Sprintf("%s.%s[%s]", stepType, name, strconv.Quote(key))
}

// RefAddr is how expressions refer to an instance: step.TYPE.NAME["key"].
func RefAddr(instanceAddr string) string { return "step." + instanceAddr }

// StepAddr is the step an instance belongs to, TYPE.NAME: block.m of
// block.m["a/c4/r1"] (InstanceAddr's first part).
func StepAddr(instanceAddr string) string {
	step, _, _ := strings.Cut(instanceAddr, "[")
	return step
}
