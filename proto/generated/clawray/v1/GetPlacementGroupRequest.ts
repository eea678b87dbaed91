// Original file: proto/head.proto


export interface GetPlacementGroupRequest {
  'placementGroupId'?: (string);
  'name'?: (string);
  'namespace'?: (string);
}

export interface GetPlacementGroupRequest__Output {
  'placementGroupId': (string);
  'name': (string);
  'namespace': (string);
}
