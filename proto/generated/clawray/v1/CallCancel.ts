// Original file: proto/actor.proto

export const CallCancel = {
  CALL_CANCEL_NONE: 'CALL_CANCEL_NONE',
  CALL_CANCEL_BY_CALLER: 'CALL_CANCEL_BY_CALLER',
  CALL_CANCEL_DEADLINE: 'CALL_CANCEL_DEADLINE',
} as const;

export type CallCancel =
  | 'CALL_CANCEL_NONE'
  | 0
  | 'CALL_CANCEL_BY_CALLER'
  | 1
  | 'CALL_CANCEL_DEADLINE'
  | 2

export type CallCancel__Output = typeof CallCancel[keyof typeof CallCancel]
