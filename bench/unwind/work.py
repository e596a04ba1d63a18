# Pure-Python work for bench/unwind/run.sh: recursive fib plus a dict-heavy loop.
# Usage: python3 work.py UNITS
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def dict_work(n):
    d = {}
    for i in range(n):
        k = (i * 2654435761) % 100003
        d[k] = d.get(k, 0) + i
    return sum(d.values())


def main(units):
    acc = 0
    for _ in range(units):
        acc += fib(20)
        acc += dict_work(40000)
    print(acc)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
