module nfd.test/goregex

go 1.25
