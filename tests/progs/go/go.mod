module epollfix.test/progs

go 1.20
