module github.com/primeintellect/primeexporter/e2e

go 1.26.0

require github.com/primeintellect/primeexporter v0.0.0

replace github.com/primeintellect/primeexporter => ../
