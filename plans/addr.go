package plans

import (
	"fmt"
	"strconv"
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
