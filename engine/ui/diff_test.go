package ui

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// git diff's output for the names and shapes a head can hold: quoted
// names, a name with a space (git ends its ---/+++ lines with a tab), a
// rename, a binary file and a last line with no newline.
func TestParsePatch(t *testing.T) {
	patch := "diff --git \"a/t\\303\\251\\tab\" \"b/t\\303\\251\\tab\"\n" +
		"index 1..2 100644\n--- \"a/t\\303\\251\\tab\"\n+++ \"b/t\\303\\251\\tab\"\n" +
		"@@ -1,3 +1,3 @@\n a\n-b\n-c\n+B\n d\n" +
		"diff --git a/two words.txt b/two words.txt\nnew file mode 100644\n--- /dev/null\n+++ b/two words.txt\t\n" +
		"@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n" +
		"diff --git a/old.go b/new.go\nsimilarity index 90%\nrename from old.go\nrename to new.go\n" +
		"diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n" +
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
	files, cut := parsePatch(patch)
	assert.False(t, cut)
	require.Len(t, files, 5)
	assert.Equal(t, "té\tab", files[0].Path)
	assert.Equal(t, [2]int{1, 2}, [2]int{files[0].Added, files[0].Deleted})
	rows := files[0].Hunks[0].Rows
	require.Len(t, rows, 4)
	assert.Equal(t, diffRow{Left: diffLine{"del", 2, 0, "b"}, Right: diffLine{"add", 0, 2, "B"}}, rows[1])
	assert.Equal(t, diffRow{Left: diffLine{"del", 3, 0, "c"}}, rows[2])
	assert.Equal(t, diffLine{"ctx", 4, 3, "d"}, rows[3].Right)
	assert.Equal(t, "two words.txt", files[1].Path)
	assert.Equal(t, "note", files[1].Hunks[0].Lines[1].Kind)
	assert.Equal(t, [2]string{"new.go", "old.go"}, [2]string{files[2].Path, files[2].Old})
	assert.True(t, files[3].Binary)
	assert.Equal(t, "gone.txt", files[4].Path)
	assert.Equal(t, 1, files[4].Deleted)
}

// A diff longer than the page renders is cut, and says so.
func TestParsePatchCutsALongDiff(t *testing.T) {
	patch := "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1,9000 @@\n"
	for range 9000 {
		patch += "+x\n"
	}
	files, cut := parsePatch(patch)
	assert.True(t, cut)
	assert.Len(t, files[0].Hunks[0].Lines, maxDiffLines)
	assert.True(t, files[0].Cut)
	assert.Equal(t, 9000, files[0].Added)
}
