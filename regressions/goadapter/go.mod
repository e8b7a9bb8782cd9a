module github.com/locklab/locklab/regressions/goadapter

go 1.22
