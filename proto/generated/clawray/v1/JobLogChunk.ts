// Original file: proto/head.proto


export interface JobLogChunk {
  'text'?: (string);
  'nextOffset'?: (number | string);
  'done'?: (boolean);
  'attempt'?: (number);
}

export interface JobLogChunk__Output {
  'text': (string);
  'nextOffset': (number);
  'done': (boolean);
  'attempt': (number);
}
