module github.com/groveworks/grove

go 1.26
