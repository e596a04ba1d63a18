/* Runs a Lua script with the Lua 5.4 interpreter built from the sources in the lua-src crate
 * (bench/trace/lua.sh builds both with -finstrument-functions). The script sees ARG and MODE.
 * Usage: lua_main SCRIPT [ARG [MODE]] */
#include <stdio.h>
#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT [ARG [MODE]]\n", argv[0]);
        return 2;
    }
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_pushstring(L, argc > 2 ? argv[2] : "");
    lua_setglobal(L, "ARG");
    lua_pushstring(L, argc > 3 ? argv[3] : "");
    lua_setglobal(L, "MODE");
    int rc = luaL_dofile(L, argv[1]);
    if (rc != LUA_OK)
        fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_close(L);
    return rc == LUA_OK ? 0 : 1;
}
