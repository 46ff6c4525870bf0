package main

import "github.com/primeintellect/primeexporter/cmd/internal/trainerlib"

func main() {
	trainerlib.Main("demotrainer", parseConfig, run)
}
