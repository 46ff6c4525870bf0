package sampletable

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// FuzzNumberRunsAgreeWithEncodingJSON: numbersFrom takes a run of bytes
// that numbers and commas are made of as a list of numbers exactly when
// encoding/json takes the list in brackets, a comma that ends the run
// left out of it.
func FuzzNumberRunsAgreeWithEncodingJSON(f *testing.F) {
	fuzzCases(f, numberRunCases(), checkNumberRun)
}

func TestNumberRunsAgreeWithEncodingJSONAcrossBlocks(t *testing.T) {
	// After a run of valid numbers of every length: each rule's
	// neighbours and carries across a block's edge somewhere.
	atEveryOffset(t, numberRunCases(), func(s string, n int) []string {
		return []string{strings.Repeat("7,", n/2) + strings.Repeat("1", n%2+1) + "," + s}
	}, checkNumberRun)
	// Every byte a number is made of at every place of a long valid run.
	valid := strings.Repeat("-0.5843972563743591,151644,0,1e-05,2.5E+3,", 4)
	for p := range len(valid) {
		for _, c := range []byte("0123456789-+.eE,x ") {
			b := []byte(valid)
			b[p] = c
			checkNumberRun(t, string(b))
		}
	}
}

func numberRunCases() []string {
	return []string{
		"1", "0", "-0", "-1", "1.5", "-0.5843972563743591", "1e5", "1E+5", "1e-05", "0.0e0", "151644,872,198",
		"01", "-", "1.", ".5", "1e", "1e+", "--1", "1-2", "1+2", "+1", "1..2", "1.2.3", "1e2e3", "1e2.3", "1.e5",
		"1,,2", "1,", ",1", "0,00", "-01", "1,-", "1,e5", "1,.5", "00.5", "1e5-", "1e+-5", "1ee5", "9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,x",
		strings.Repeat("-0.26964154839515686,", 20) + "1",
		strings.Repeat("146046,", 30) + "0",
		strings.Repeat("1,", 31) + "01",
		strings.Repeat("1,", 32) + "1.",
		strings.Repeat("12", 32) + "e",
	}
}

// checkNumberRun holds numbersFrom on s, ended by ']', to encoding/json.
func checkNumberRun(t testing.TB, s string) {
	t.Helper()
	if s == "" || (s[0] != '-' && s[0]-'0' > 9) {
		return
	}
	run := len(s)
	if i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789-+.eE,", r) }); i >= 0 {
		run = i
	}
	wantEnd := run
	if s[run-1] == ',' {
		wantEnd--
	}
	wantOK := wantEnd > 0 && json.Valid([]byte("["+s[:wantEnd]+"]"))
	end, ok := numbersFrom(s+"]", 0)
	if ok != wantOK || (ok && end != wantEnd) {
		t.Fatalf("numbersFrom(%q) = %d, %v; want %d, %v", s, end, ok, wantEnd, wantOK)
	}
}

// TestTheVectorNumberClassesAreTheWordOnes puts every byte at every
// position of a block and classifies it with the vector scan and without.
func TestTheVectorNumberClassesAreTheWordOnes(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("no vector scan on this CPU")
	}
	r := rand.New(rand.NewPCG(5, 6))
	block := make([]byte, 64)
	for i := range block {
		block[i] = byte(r.IntN(256))
	}
	for p := range 64 {
		for c := range 256 {
			b := append([]byte(nil), block...)
			b[p] = byte(c)
			var vec [1]numberClasses
			var words numberClasses
			numberBlocks(string(b), vec[:])
			classifyNumberWords(string(b), &words)
			if vec[0] != words {
				t.Fatalf("byte %#x at %d: vector %+v, words %+v", c, p, vec, words)
			}
		}
	}
}

func TestLongArraysOfNumbersAreIndexedAsTheScannerReadsThem(t *testing.T) {
	valid := `{"token_ids":[` + strings.Repeat("151644,872,", 40) + `198],"logprobs":[` +
		strings.Repeat("-0.5843972563743591,-1.2513262033462524e-05,", 20) + `0],"mask":[` + strings.Repeat("false,true,", 20) + `true]}`
	checkIndex(t, valid)
	for p := range len(valid) {
		for _, c := range []byte("0-.e,x ]") {
			b := []byte(valid)
			b[p] = c
			checkIndex(t, string(b))
		}
	}
}
