module epollfix.test/cgobusy

go 1.18
