package exec

import "github.com/rigor-bench/rigor/plans"

func fileSHA256(path string) (string, error) { return plans.FileSHA256(path) }
