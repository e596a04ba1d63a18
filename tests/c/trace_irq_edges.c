/* Irqs outside the traced span (issue 25): a constructor, not instrumented, sends 500 64-byte
 * datagrams to a loopback UDP socket before main, so NET_RX softirqs run in the main thread's
 * context before its first traced event; main then calls send_some(), which sends 500 more.
 * Nobody reads the socket (the kernel drops what does not fit its buffer; the receive path
 * runs all the same). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NOI __attribute__((no_instrument_function))

static int rs = -1, ss = -1;
static struct sockaddr_in to;

static NOI void send_n(int n) {
    char buf[64];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < n; i++)
        sendto(ss, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to);
}

static NOI __attribute__((constructor)) void before_main(void) {
    rs = socket(AF_INET, SOCK_DGRAM, 0);
    ss = socket(AF_INET, SOCK_DGRAM, 0);
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = __builtin_bswap32(INADDR_LOOPBACK); /* htonl: an instrumented inline */
    socklen_t len = sizeof to;
    if (bind(rs, (struct sockaddr *)&to, sizeof to) == 0 &&
        getsockname(rs, (struct sockaddr *)&to, &len) == 0)
        send_n(500);
}

__attribute__((noinline)) void send_some(void) { send_n(500); }

int main(void) {
    send_some();
    return 0;
}
