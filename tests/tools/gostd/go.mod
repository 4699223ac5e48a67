module nfd.test/gostd-oracle

go 1.25
