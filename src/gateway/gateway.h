/* gateway.h: inferrail-gateway internals. */
#ifndef IR_GATEWAY_H
#define IR_GATEWAY_H

int gw_main(int argc, char **argv);

#endif
