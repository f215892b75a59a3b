#!/bin/bash
# Session 31, device calls 7 and 10 (H200): call5.sh after the two waves beyond T = 8, against the start with
# those off as well (MOE_SV_GWAVES=1 MOE_SV_DWAVES=1), T = 1-32.
#   RUN=7 ROUNDS=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call7.sh
RUN=${RUN:-7} START="MOE_SV_CST=0 MOE_SV_DYNW=0 MOE_SV_DYN=3 MOE_SV_GWAVES=1 MOE_SV_DWAVES=1" TOKENS=1,2,4,8,12,16,24,32 \
  exec bash $(dirname $0)/call5.sh
